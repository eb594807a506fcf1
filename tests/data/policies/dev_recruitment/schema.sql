-- A recruitment agency's candidate data: DEVELOPMENT domain of the offline policy extractor (issue 27, POLICY9).
-- Written, with its gold, before the extractor first ran on it; its first score is an unseen figure, later ones
-- are development figures. Not frozen.
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, team VARCHAR);
CREATE TABLE Candidate (
    candidate_id INTEGER PRIMARY KEY,
    full_name VARCHAR,
    email VARCHAR,
    phone VARCHAR,
    home_address VARCHAR,
    date_of_birth DATE,
    cv_text VARCHAR,                 -- the CV as uploaded
    salary_expectation INTEGER,      -- yearly, in pounds
    account_manager_id INTEGER REFERENCES Staff(staff_id)
);
CREATE TABLE Client (client_id INTEGER PRIMARY KEY, company_name VARCHAR, contract_active BOOLEAN);
CREATE TABLE JobApplication (application_id INTEGER PRIMARY KEY,
    candidate_id INTEGER REFERENCES Candidate(candidate_id), client_id INTEGER REFERENCES Client(client_id),
    recruiter_id INTEGER REFERENCES Staff(staff_id), job_title VARCHAR, stage VARCHAR);
CREATE TABLE InterviewFeedback (feedback_id INTEGER PRIMARY KEY,
    application_id INTEGER REFERENCES JobApplication(application_id), interviewer VARCHAR, feedback_text VARCHAR);
CREATE TABLE BackgroundCheck (check_id INTEGER PRIMARY KEY, candidate_id INTEGER REFERENCES Candidate(candidate_id),
    check_type VARCHAR, result VARCHAR);
CREATE TABLE BankDetail (bank_detail_id INTEGER PRIMARY KEY, candidate_id INTEGER REFERENCES Candidate(candidate_id),
    account_name VARCHAR, sort_code VARCHAR, account_number VARCHAR);
CREATE TABLE Placement (
    placement_id INTEGER PRIMARY KEY,
    candidate_id INTEGER REFERENCES Candidate(candidate_id),
    client_id INTEGER REFERENCES Client(client_id),
    start_date DATE,
    status VARCHAR                   -- active, ended
);
CREATE TABLE Timesheet (timesheet_id INTEGER PRIMARY KEY, placement_id INTEGER REFERENCES Placement(placement_id),
    week_ending DATE, hours DECIMAL(5, 2));
CREATE TABLE SharingConsent (candidate_id INTEGER REFERENCES Candidate(candidate_id),
    client_id INTEGER REFERENCES Client(client_id), granted BOOLEAN);
CREATE TABLE Supplier (supplier_id INTEGER PRIMARY KEY, name VARCHAR, service VARCHAR, agreement_active BOOLEAN);
INSERT INTO Staff VALUES (1, 'R1', 'recruitment'), (2, 'R2', 'recruitment'), (3, 'C1', 'compliance'), (4, 'M1', 'marketing'),
    (5, 'P1', 'payroll');
INSERT INTO Candidate VALUES
    (1, 'Cand One', 'c1@x', '07700-1', 'a', DATE '1992-01-02', 'Warehouse supervisor for six years, forklift licence', 28000, 1),
    (2, 'Cand Two', 'c2@x', '07700-2', 'b', DATE '1988-03-04', 'Accountant, chartered, ten years in audit', 52000, 2),
    (3, 'Cand Three', 'c3@x', '07700-3', 'c', DATE '2001-05-06', 'Graduate, retail and bar work', 24000, 1);
INSERT INTO Client VALUES (1, 'Northern Foods', true), (2, 'Kelso Audit', true), (3, 'Old Client', false);
INSERT INTO JobApplication VALUES (1, 1, 1, 1, 'shift lead', 'interview'), (2, 2, 2, 2, 'audit manager', 'offer'),
    (3, 3, 1, 1, 'packer', 'applied');
INSERT INTO InterviewFeedback VALUES (1, 1, 'Line manager', 'strong on safety, a little quiet in the group task'),
    (2, 2, 'Partner', 'excellent technical answers, salary above band');
INSERT INTO BackgroundCheck VALUES (1, 1, 'criminal_record', 'clear'), (2, 2, 'right_to_work', 'verified');
INSERT INTO BankDetail VALUES (1, 1, 'C One', '01-01-01', '11111111'), (2, 2, 'C Two', '02-02-02', '22222222');
INSERT INTO Placement VALUES (1, 1, 1, DATE '2024-05-01', 'active'), (2, 2, 2, DATE '2023-01-09', 'ended');
INSERT INTO Timesheet VALUES (1, 1, DATE '2024-05-05', 37.5), (2, 1, DATE '2024-05-12', 40.0);
INSERT INTO SharingConsent VALUES (1, 1, true), (2, 2, true), (3, 1, false);
INSERT INTO Supplier VALUES (1, 'PayCo', 'payroll', true), (2, 'ScreenSafe', 'screening', true);
