-- A tutoring agency's pupil records: DEVELOPMENT domain of the offline policy extractor's conditions (issue 27,
-- POLICY13). Written, with its gold, before the extractor first ran on it; its first score is a development
-- figure of a text the condition rules had not seen, later ones are development figures. Not frozen.
CREATE TABLE Pupil (pupil_id INTEGER PRIMARY KEY, full_name VARCHAR, date_of_birth DATE, home_address VARCHAR,
    school_name VARCHAR, medical_notes VARCHAR, marketing_opt_in BOOLEAN);
COMMENT ON COLUMN Pupil.medical_notes IS 'Allergies, conditions and medication the pupil has told us about';
COMMENT ON COLUMN Pupil.marketing_opt_in IS 'The pupil agreed to receive marketing from our partners';
CREATE TABLE Parent (parent_id INTEGER PRIMARY KEY, full_name VARCHAR, email VARCHAR, phone VARCHAR);
CREATE TABLE Guardianship (parent_id INTEGER REFERENCES Parent(parent_id), pupil_id INTEGER REFERENCES Pupil(pupil_id),
    PRIMARY KEY (parent_id, pupil_id));
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, full_name VARCHAR,
    role VARCHAR CHECK (role IN ('tutor', 'coordinator', 'office', 'safeguarding_lead')));
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR,
    kind VARCHAR CHECK (kind IN ('exam_board', 'marketing_partner', 'debt_collector')),
    contract_status VARCHAR CHECK (contract_status IN ('active', 'expired')));
COMMENT ON COLUMN Partner.contract_status IS 'Whether our contract with the partner is active or expired';
CREATE TABLE Class (class_id INTEGER PRIMARY KEY, tutor_id INTEGER REFERENCES Staff(staff_id), subject VARCHAR,
    term VARCHAR);
COMMENT ON COLUMN Class.tutor_id IS 'The tutor who teaches the class';
CREATE TABLE Enrolment (enrolment_id INTEGER PRIMARY KEY, pupil_id INTEGER REFERENCES Pupil(pupil_id),
    class_id INTEGER REFERENCES Class(class_id), status VARCHAR CHECK (status IN ('active', 'closed')));
CREATE TABLE TutoringSession (session_id INTEGER PRIMARY KEY, class_id INTEGER REFERENCES Class(class_id),
    tutor_id INTEGER REFERENCES Staff(staff_id), held_on DATE);
COMMENT ON COLUMN TutoringSession.tutor_id IS 'The tutor who taught the session (a cover tutor if the class tutor was away)';
CREATE TABLE Attendance (attendance_id INTEGER PRIMARY KEY, session_id INTEGER REFERENCES TutoringSession(session_id),
    pupil_id INTEGER REFERENCES Pupil(pupil_id), present BOOLEAN);
CREATE TABLE Assignment (assignment_id INTEGER PRIMARY KEY, tutor_id INTEGER REFERENCES Staff(staff_id),
    pupil_id INTEGER REFERENCES Pupil(pupil_id), started_on DATE);
CREATE TABLE ProgressReport (report_id INTEGER PRIMARY KEY, pupil_id INTEGER REFERENCES Pupil(pupil_id),
    written_by INTEGER REFERENCES Staff(staff_id), term VARCHAR, summary VARCHAR);
CREATE TABLE ExamResult (result_id INTEGER PRIMARY KEY, pupil_id INTEGER REFERENCES Pupil(pupil_id), subject VARCHAR,
    grade VARCHAR);
CREATE TABLE Consent (consent_id INTEGER PRIMARY KEY, pupil_id INTEGER REFERENCES Pupil(pupil_id),
    topic VARCHAR CHECK (topic IN ('exam_entry', 'photographs')), granted BOOLEAN);
CREATE TABLE Concern (concern_id INTEGER PRIMARY KEY, pupil_id INTEGER REFERENCES Pupil(pupil_id),
    raised_by INTEGER REFERENCES Staff(staff_id), status VARCHAR CHECK (status IN ('open', 'closed')), details VARCHAR);
COMMENT ON TABLE Concern IS 'Safeguarding concerns raised about a pupil';
CREATE TABLE Invoice (invoice_id INTEGER PRIMARY KEY, pupil_id INTEGER REFERENCES Pupil(pupil_id),
    amount DECIMAL(8, 2), due_date DATE, paid BOOLEAN);
COMMENT ON COLUMN Invoice.due_date IS 'Date by which the invoice must be paid';
INSERT INTO Pupil VALUES (1, 'P1', DATE '2010-04-01', 'a', 'North High', 'asthma', true),
    (2, 'P2', DATE '2011-09-12', 'b', 'South High', NULL, false), (3, 'P3', DATE '2009-01-30', 'c', 'North High', NULL, false);
INSERT INTO Parent VALUES (1, 'G1', 'g1@x', '0700-1'), (2, 'G2', 'g2@x', '0700-2');
INSERT INTO Guardianship VALUES (1, 1), (1, 2), (2, 3);
INSERT INTO Staff VALUES (1, 'T1', 'tutor'), (2, 'T2', 'tutor'), (3, 'C1', 'coordinator'), (4, 'O1', 'office'),
    (5, 'L1', 'safeguarding_lead');
INSERT INTO Partner VALUES (1, 'Exams Ltd', 'exam_board', 'active'), (2, 'Ads Ltd', 'marketing_partner', 'active'),
    (3, 'Collect Ltd', 'debt_collector', 'expired');
INSERT INTO Class VALUES (1, 1, 'maths', '2025-autumn'), (2, 2, 'english', '2025-autumn');
INSERT INTO Enrolment VALUES (1, 1, 1, 'active'), (2, 2, 2, 'active'), (3, 3, 1, 'closed');
INSERT INTO TutoringSession VALUES (1, 1, 1, DATE '2025-09-08'), (2, 2, 1, DATE '2025-09-09');
INSERT INTO Attendance VALUES (1, 1, 1, true), (2, 2, 2, false);
INSERT INTO Assignment VALUES (1, 2, 1, DATE '2025-09-01'), (2, 1, 3, DATE '2025-09-01');
INSERT INTO ProgressReport VALUES (1, 1, 1, '2025-autumn', 'good'), (2, 2, 2, '2025-autumn', 'steady');
INSERT INTO ExamResult VALUES (1, 1, 'maths', 'A'), (2, 3, 'maths', 'C');
INSERT INTO Consent VALUES (1, 1, 'exam_entry', true), (2, 2, 'exam_entry', false), (3, 3, 'photographs', true);
INSERT INTO Concern VALUES (1, 2, 1, 'open', 'x'), (2, 3, 5, 'closed', 'y');
INSERT INTO Invoice VALUES (1, 1, 120.00, DATE '2025-09-30', true), (2, 2, 80.00, DATE '2025-06-30', false),
    (3, 3, 95.00, DATE '2025-10-31', false);
