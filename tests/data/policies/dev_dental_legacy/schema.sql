-- A dental practice's records on an old practice-management system with terse column names, described by the
-- database's own comments (COMMENT ON): DEVELOPMENT domain of the offline policy extractor (issue 27, POLICY11).
-- Written, with its gold, before the extractor first ran on it. Not frozen.
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, nm VARCHAR, job VARCHAR);
CREATE TABLE Patient (
    pt_id INTEGER PRIMARY KEY,
    nm VARCHAR,
    dob DATE,
    addr1 VARCHAR,
    tel_h VARCHAR,
    tel_m VARCHAR,
    nhs_no VARCHAR,
    recall_ok BOOLEAN
);
COMMENT ON COLUMN Patient.nm IS 'Patient full name';
COMMENT ON COLUMN Patient.dob IS 'Date of birth';
COMMENT ON COLUMN Patient.addr1 IS 'Home address';
COMMENT ON COLUMN Patient.tel_h IS 'Home telephone number';
COMMENT ON COLUMN Patient.tel_m IS 'Mobile phone number';
COMMENT ON COLUMN Patient.nhs_no IS 'National health service number';
COMMENT ON COLUMN Patient.recall_ok IS 'Patient agreed to recall reminders';
CREATE TABLE Appt (appt_id INTEGER PRIMARY KEY, pt_id INTEGER REFERENCES Patient(pt_id),
    clin_id INTEGER REFERENCES Staff(staff_id), slot TIMESTAMP, chair VARCHAR);
COMMENT ON TABLE Appt IS 'Appointment book';
COMMENT ON COLUMN Appt.clin_id IS 'Clinician seeing the patient';
COMMENT ON COLUMN Appt.slot IS 'Appointment date and time';
CREATE TABLE Chart (chart_id INTEGER PRIMARY KEY, pt_id INTEGER REFERENCES Patient(pt_id), tooth VARCHAR,
    cond VARCHAR, tx_plan VARCHAR);
COMMENT ON TABLE Chart IS 'Dental chart';
COMMENT ON COLUMN Chart.cond IS 'Condition of the tooth';
COMMENT ON COLUMN Chart.tx_plan IS 'Treatment plan';
CREATE TABLE MedHx (mh_id INTEGER PRIMARY KEY, pt_id INTEGER REFERENCES Patient(pt_id), allergies VARCHAR,
    meds VARCHAR, cond VARCHAR);
COMMENT ON TABLE MedHx IS 'Medical history questionnaire';
COMMENT ON COLUMN MedHx.meds IS 'Current medicines';
CREATE TABLE Xray (img_id INTEGER PRIMARY KEY, pt_id INTEGER REFERENCES Patient(pt_id), taken DATE, img_ref VARCHAR);
COMMENT ON TABLE Xray IS 'Radiographs';
CREATE TABLE Acct (acct_id INTEGER PRIMARY KEY, pt_id INTEGER REFERENCES Patient(pt_id), bal DECIMAL(8, 2),
    last_pay DATE);
COMMENT ON TABLE Acct IS 'Patient accounts';
COMMENT ON COLUMN Acct.bal IS 'Outstanding balance';
CREATE TABLE Laboratory (lab_id INTEGER PRIMARY KEY, nm VARCHAR, contract_active BOOLEAN);
INSERT INTO Staff VALUES (1, 'D1', 'dentist'), (2, 'D2', 'dentist'), (3, 'N1', 'nurse'), (4, 'H1', 'hygienist'),
    (5, 'R1', 'receptionist'), (6, 'M1', 'manager');
INSERT INTO Patient VALUES (1, 'Patient One', DATE '1980-02-03', '1 High St', '01632-1', '07700-1', 'NH001', true),
    (2, 'Patient Two', DATE '1992-07-08', '2 High St', '01632-2', '07700-2', 'NH002', false),
    (3, 'Patient Three', DATE '2001-11-12', '3 High St', NULL, '07700-3', 'NH003', true);
INSERT INTO Appt VALUES (1, 1, 1, TIMESTAMP '2024-05-01 09:00', 'A'), (2, 2, 4, TIMESTAMP '2024-05-01 10:00', 'B'),
    (3, 3, 2, TIMESTAMP '2024-05-02 11:00', 'A');
INSERT INTO Chart VALUES (1, 1, 'UL6', 'caries', 'filling'), (2, 2, 'LR7', 'fractured', 'crown');
INSERT INTO MedHx VALUES (1, 1, 'penicillin', 'none', 'asthma'), (2, 2, 'none', 'warfarin', 'none');
INSERT INTO Xray VALUES (1, 1, DATE '2024-05-01', 'img/0001'), (2, 2, DATE '2024-05-01', 'img/0002');
INSERT INTO Acct VALUES (1, 1, 45.00, DATE '2024-04-01'), (2, 2, 0.00, DATE '2024-05-01');
INSERT INTO Laboratory VALUES (1, 'Crown Lab', true), (2, 'Old Lab', false);
