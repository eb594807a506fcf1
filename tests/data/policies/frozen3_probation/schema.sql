-- An adult probation department's case files: FROZEN domain (issue 27, FROZEN3). Never tune a rule on it.
CREATE TABLE Officer (officer_id INTEGER PRIMARY KEY, full_name VARCHAR, badge_no VARCHAR, title VARCHAR);
CREATE TABLE Agency (agency_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, agreement_active BOOLEAN);
CREATE TABLE Victim (victim_id INTEGER PRIMARY KEY, full_name VARCHAR, email VARCHAR);
CREATE TABLE Supervisee (supervisee_id INTEGER PRIMARY KEY, full_name VARCHAR, date_of_birth DATE, ssn VARCHAR,
    home_address VARCHAR, phone VARCHAR);
CREATE TABLE CaseFile (case_id INTEGER PRIMARY KEY, supervisee_id INTEGER REFERENCES Supervisee(supervisee_id),
    docket_no VARCHAR, offense VARCHAR, term_months INTEGER, status VARCHAR, opened_on DATE);
CREATE TABLE CaseAssignment (case_id INTEGER REFERENCES CaseFile(case_id),
    officer_id INTEGER REFERENCES Officer(officer_id), PRIMARY KEY (case_id, officer_id));
CREATE TABLE DrugTest (test_id INTEGER PRIMARY KEY, supervisee_id INTEGER REFERENCES Supervisee(supervisee_id),
    collected_on DATE, substance_panel VARCHAR, outcome VARCHAR);
CREATE TABLE ContactLog (entry_id INTEGER PRIMARY KEY, case_id INTEGER REFERENCES CaseFile(case_id),
    officer_id INTEGER REFERENCES Officer(officer_id), contact_date DATE, method VARCHAR, narrative VARCHAR);
CREATE TABLE PresentenceReport (report_id INTEGER PRIMARY KEY, case_id INTEGER REFERENCES CaseFile(case_id),
    author_id INTEGER REFERENCES Officer(officer_id), prior_record VARCHAR, family_history VARCHAR,
    psych_eval VARCHAR, recommendation VARCHAR);
CREATE TABLE TreatmentReferral (referral_id INTEGER PRIMARY KEY,
    supervisee_id INTEGER REFERENCES Supervisee(supervisee_id), agency_id INTEGER REFERENCES Agency(agency_id),
    program_name VARCHAR, referred_on DATE, attended BOOLEAN);
CREATE TABLE ReleaseOfInformation (supervisee_id INTEGER REFERENCES Supervisee(supervisee_id),
    agency_id INTEGER REFERENCES Agency(agency_id), signed BOOLEAN, signed_on DATE,
    PRIMARY KEY (supervisee_id, agency_id));
CREATE TABLE VictimRegistration (victim_id INTEGER REFERENCES Victim(victim_id),
    case_id INTEGER REFERENCES CaseFile(case_id), notify BOOLEAN, PRIMARY KEY (victim_id, case_id));
CREATE TABLE Restitution (payment_id INTEGER PRIMARY KEY, case_id INTEGER REFERENCES CaseFile(case_id),
    amount_ordered DECIMAL(10, 2), amount_paid DECIMAL(10, 2), last_payment_on DATE);
COMMENT ON COLUMN Officer.title IS 'probation_officer, presentence_investigator, records_clerk or unit_supervisor';
COMMENT ON COLUMN CaseFile.status IS 'active, closed or revoked';
COMMENT ON COLUMN DrugTest.outcome IS 'negative, positive or dilute';
COMMENT ON COLUMN PresentenceReport.psych_eval IS 'summary of the psychological evaluation';
INSERT INTO Officer VALUES (1, 'O1', 'B101', 'probation_officer'), (2, 'O2', 'B102', 'probation_officer'),
    (3, 'O3', 'B201', 'presentence_investigator'), (4, 'O4', 'B301', 'records_clerk'),
    (5, 'O5', 'B401', 'unit_supervisor');
INSERT INTO Agency VALUES (1, 'Northside Recovery', 'treatment_provider', true),
    (2, 'Harbor Clinic', 'treatment_provider', false), (3, 'County Sheriff', 'law_enforcement', true),
    (4, 'Acme Freight', 'employer', false), (5, 'State University', 'research_institution', true);
INSERT INTO Victim VALUES (1, 'V1', 'v1@example.org'), (2, 'V2', 'v2@example.org');
INSERT INTO Supervisee VALUES (1, 'S1', DATE '1990-03-01', '111-22-3333', '1 Elm St', '555-0101'),
    (2, 'S2', DATE '1985-07-12', '222-33-4444', '2 Oak Ave', '555-0102'),
    (3, 'S3', DATE '1999-11-30', '333-44-5555', '3 Pine Rd', '555-0103');
INSERT INTO CaseFile VALUES (1, 1, 'CR-2023-101', 'theft', 24, 'active', DATE '2023-02-01'),
    (2, 2, 'CR-2022-088', 'assault', 36, 'active', DATE '2022-05-10'),
    (3, 3, 'CR-2019-017', 'dui', 12, 'closed', DATE '2019-01-15');
INSERT INTO CaseAssignment VALUES (1, 1), (2, 2), (3, 1);
INSERT INTO DrugTest VALUES (1, 1, DATE '2024-01-05', '5-panel', 'negative'), (2, 2, DATE '2024-01-06', '10-panel', 'positive');
INSERT INTO ContactLog VALUES (1, 1, 1, DATE '2024-01-10', 'home_visit', 'stable'),
    (2, 2, 2, DATE '2024-01-11', 'office', 'missed curfew');
INSERT INTO PresentenceReport VALUES (1, 2, 3, 'two prior misdemeanors', 'raised by grandparents', 'anxiety', 'probation');
INSERT INTO TreatmentReferral VALUES (1, 2, 1, 'anger management', DATE '2023-06-01', true),
    (2, 1, 2, 'outpatient substance use', DATE '2023-04-01', false);
INSERT INTO ReleaseOfInformation VALUES (2, 1, true, DATE '2023-05-30'), (1, 2, false, NULL);
INSERT INTO VictimRegistration VALUES (1, 2, true), (2, 1, false);
INSERT INTO Restitution VALUES (1, 2, 1500.00, 400.00, DATE '2024-01-02'), (2, 1, 300.00, 300.00, DATE '2023-12-01');
