-- City department of human services: case files (frozen evaluation domain of the offline
-- policy extractor, issue 27; written before any extractor change, never tuned on).
CREATE TABLE Client (client_id INTEGER PRIMARY KEY, full_name VARCHAR, date_of_birth DATE, address VARCHAR,
    phone VARCHAR, ssn VARCHAR, immigration_status VARCHAR);
CREATE TABLE Caseworker (worker_id INTEGER PRIMARY KEY, name VARCHAR, unit VARCHAR);
CREATE TABLE CaseFile (case_id INTEGER PRIMARY KEY, client_id INTEGER REFERENCES Client(client_id),
    program VARCHAR, opened DATE, status VARCHAR, narrative VARCHAR);
CREATE TABLE Assignment (worker_id INTEGER REFERENCES Caseworker(worker_id),
    case_id INTEGER REFERENCES CaseFile(case_id), PRIMARY KEY (worker_id, case_id));
CREATE TABLE Benefit (benefit_id INTEGER PRIMARY KEY, client_id INTEGER REFERENCES Client(client_id),
    program VARCHAR, monthly_amount DECIMAL(10, 2), start_date DATE);
CREATE TABLE HealthNote (note_id INTEGER PRIMARY KEY, client_id INTEGER REFERENCES Client(client_id),
    mental_health_dx VARCHAR, substance_use VARCHAR);
CREATE TABLE Provider (provider_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR);
CREATE TABLE Referral (referral_id INTEGER PRIMARY KEY, case_id INTEGER REFERENCES CaseFile(case_id),
    provider_id INTEGER REFERENCES Provider(provider_id), consent_signed BOOLEAN);
CREATE TABLE Office (office_id INTEGER PRIMARY KEY, name VARCHAR, address VARCHAR, hours VARCHAR);
INSERT INTO Client VALUES
    (1, 'Ana Ruiz', DATE '1984-03-02', '12 Elm St', '555-0201', '111-22-3333', 'citizen'),
    (2, 'Ben Okafor', DATE '1990-07-19', '8 Pine Ave', '555-0202', '222-33-4444', 'permanent_resident'),
    (3, 'Cleo Marsh', DATE '1972-11-30', '40 Oak Rd', '555-0203', '333-44-5555', 'refugee'),
    (4, 'Dev Patel', DATE '2001-01-15', '3 Birch Ln', '555-0204', '444-55-6666', 'citizen');
INSERT INTO Caseworker VALUES (1, 'R. Lowe', 'intake'), (2, 'S. Kim', 'child_welfare'), (3, 'T. Grant', 'adult_services'),
    (4, 'U. Ford', 'supervisor'), (5, 'V. Adams', 'fraud_investigation'), (6, 'W. Cho', 'adult_services');
INSERT INTO CaseFile VALUES (10, 1, 'snap', DATE '2023-02-01', 'open', 'Household of three; rent arrears.'),
    (11, 2, 'tanf', DATE '2022-09-12', 'closed', 'Employment plan completed.'),
    (12, 3, 'housing', DATE '2024-01-05', 'open', 'Referred to emergency shelter.'),
    (13, 4, 'snap', DATE '2024-04-20', 'open', 'Student; part-time income.');
INSERT INTO Assignment VALUES (1, 10), (3, 12), (6, 12), (2, 13), (3, 11);
INSERT INTO Benefit VALUES (20, 1, 'snap', 412.00, DATE '2023-03-01'), (21, 2, 'tanf', 530.00, DATE '2022-10-01'),
    (22, 3, 'housing', 900.00, DATE '2024-02-01'), (23, 4, 'snap', 250.00, DATE '2024-05-01');
INSERT INTO HealthNote VALUES (30, 1, 'none', 'none'), (31, 3, 'ptsd', 'alcohol'), (32, 4, 'depression', 'none');
INSERT INTO Provider VALUES (1, 'Harbor House', 'shelter'), (2, 'Eastside Clinic', 'health_clinic'),
    (3, 'City Food Bank', 'food_bank'), (4, 'Police Department', 'law_enforcement'), (5, 'County Court', 'court');
INSERT INTO Referral VALUES (40, 12, 1, true), (41, 12, 2, false), (42, 10, 3, true), (43, 13, 2, true);
INSERT INTO Office VALUES (1, 'Central Office', '100 Main St', 'Mon-Fri 8-5'), (2, 'North Office', '9 Hill Rd', 'Mon-Thu 9-4');
