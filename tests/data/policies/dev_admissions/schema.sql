-- A university's admissions records: DEVELOPMENT domain of the offline policy extractor (issue 27, POLICY7).
-- Written, with its gold, before the extractor first ran on it; its first score is an unseen figure, later
-- ones are development figures. Not frozen.
CREATE TABLE Applicant (applicant_id INTEGER PRIMARY KEY, full_name VARCHAR, date_of_birth DATE, email VARCHAR,
    home_address VARCHAR, nationality VARCHAR, disability_status VARCHAR);
CREATE TABLE Programme (programme_id INTEGER PRIMARY KEY, name VARCHAR, department VARCHAR);
CREATE TABLE Application (application_id INTEGER PRIMARY KEY, applicant_id INTEGER REFERENCES Applicant(applicant_id),
    programme_id INTEGER REFERENCES Programme(programme_id), submitted_on DATE, decision VARCHAR);
CREATE TABLE Transcript (transcript_id INTEGER PRIMARY KEY, applicant_id INTEGER REFERENCES Applicant(applicant_id),
    school_name VARCHAR, grade_average DECIMAL(4, 2), graduation_year INTEGER);
CREATE TABLE TestScore (score_id INTEGER PRIMARY KEY, applicant_id INTEGER REFERENCES Applicant(applicant_id),
    test_name VARCHAR, score INTEGER);
CREATE TABLE PersonalStatement (statement_id INTEGER PRIMARY KEY,
    applicant_id INTEGER REFERENCES Applicant(applicant_id), statement_text VARCHAR);
CREATE TABLE ReferenceLetter (letter_id INTEGER PRIMARY KEY, applicant_id INTEGER REFERENCES Applicant(applicant_id),
    referee_name VARCHAR, letter_text VARCHAR);
CREATE TABLE FinancialAidRequest (request_id INTEGER PRIMARY KEY,
    applicant_id INTEGER REFERENCES Applicant(applicant_id), household_income DECIMAL(12, 2), award_amount DECIMAL(10, 2));
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, office VARCHAR);
CREATE TABLE ReviewAssignment (staff_id INTEGER REFERENCES Staff(staff_id),
    application_id INTEGER REFERENCES Application(application_id), assigned_on DATE);
CREATE TABLE Interview (interview_id INTEGER PRIMARY KEY, application_id INTEGER REFERENCES Application(application_id),
    interviewer_id INTEGER REFERENCES Staff(staff_id), score INTEGER, notes VARCHAR);
CREATE TABLE Agency (agency_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, agreement_active BOOLEAN);
CREATE TABLE SponsorConsent (consent_id INTEGER PRIMARY KEY, applicant_id INTEGER REFERENCES Applicant(applicant_id),
    granted BOOLEAN);
INSERT INTO Applicant VALUES (1, 'A1', DATE '2006-01-02', 'a1@x', 'a', 'GB', 'none'),
    (2, 'A2', DATE '2005-05-06', 'a2@x', 'b', 'IN', 'dyslexia'), (3, 'A3', DATE '1998-09-10', 'a3@x', 'c', 'US', 'none');
INSERT INTO Programme VALUES (1, 'Physics BSc', 'physics'), (2, 'History MA', 'history');
INSERT INTO Application VALUES (1, 1, 1, DATE '2024-10-01', 'offer'), (2, 2, 1, DATE '2024-10-03', 'pending'),
    (3, 3, 2, DATE '2024-11-01', 'reject');
INSERT INTO Transcript VALUES (1, 1, 'Hill School', 3.80, 2024), (2, 2, 'Lake School', 3.40, 2023);
INSERT INTO TestScore VALUES (1, 1, 'SAT', 1450), (2, 3, 'GRE', 320);
INSERT INTO PersonalStatement VALUES (1, 1, 'I have always wanted to study physics since I was young'),
    (2, 3, 'History matters because it tells us who we are and where we came from');
INSERT INTO ReferenceLetter VALUES (1, 1, 'Ms R', 'A diligent and curious student who leads her class'),
    (2, 2, 'Mr T', 'He works hard and helps others in the lab every week');
INSERT INTO FinancialAidRequest VALUES (1, 2, 21000.00, 5000.00), (2, 3, 54000.00, 0.00);
INSERT INTO Staff VALUES (1, 'O1', 'admissions'), (2, 'F1', 'faculty_reader'), (3, 'F2', 'faculty_reader'),
    (4, 'FA1', 'financial_aid'), (5, 'R1', 'registrar'), (6, 'RC1', 'recruitment');
INSERT INTO ReviewAssignment VALUES (2, 1, DATE '2024-10-05'), (3, 2, DATE '2024-10-06');
INSERT INTO Interview VALUES (1, 1, 2, 8, 'Strong grasp of mechanics'), (2, 3, 3, 6, 'Keen on archives');
INSERT INTO Agency VALUES (1, 'Recruit Co', 'recruitment_agent', true), (2, 'Fund Co', 'scholarship_sponsor', true),
    (3, 'Home Office', 'immigration_authority', true), (4, 'Test Co', 'test_provider', false);
INSERT INTO SponsorConsent VALUES (1, 1, true), (2, 2, false);
