-- An employer's personnel records: DEVELOPMENT domain of the offline policy extractor (issue 27).
-- Not frozen: rules may be written from it; its figures are training figures.
CREATE TABLE Employee (employee_id INTEGER PRIMARY KEY, full_name VARCHAR, home_address VARCHAR, phone VARCHAR,
    birth_date DATE, national_id VARCHAR, job_title VARCHAR);
CREATE TABLE Team (team_id INTEGER PRIMARY KEY, name VARCHAR, lead_id INTEGER REFERENCES Employee(employee_id));
CREATE TABLE Membership (employee_id INTEGER REFERENCES Employee(employee_id), team_id INTEGER REFERENCES Team(team_id),
    PRIMARY KEY (employee_id, team_id));
CREATE TABLE Vendor (vendor_id INTEGER PRIMARY KEY, kind VARCHAR, contract_active BOOLEAN);
CREATE TABLE Payslip (payslip_id INTEGER PRIMARY KEY, employee_id INTEGER REFERENCES Employee(employee_id),
    period VARCHAR, gross DECIMAL(10, 2), net DECIMAL(10, 2));
CREATE TABLE PerformanceReview (review_id INTEGER PRIMARY KEY, employee_id INTEGER REFERENCES Employee(employee_id),
    rating INTEGER, comments VARCHAR);
CREATE TABLE Grievance (grievance_id INTEGER PRIMARY KEY, employee_id INTEGER REFERENCES Employee(employee_id),
    investigator_id INTEGER REFERENCES Employee(employee_id), filed DATE, summary VARCHAR);
CREATE TABLE SickNote (note_id INTEGER PRIMARY KEY, employee_id INTEGER REFERENCES Employee(employee_id),
    diagnosis VARCHAR, days_off INTEGER);
CREATE TABLE Permission (employee_id INTEGER REFERENCES Employee(employee_id), scope VARCHAR, given BOOLEAN,
    PRIMARY KEY (employee_id, scope));
INSERT INTO Employee VALUES (1, 'E1', 'a', '1', DATE '1980-01-01', 'X1', 'hr_officer'),
    (2, 'E2', 'b', '2', DATE '1985-01-01', 'X2', 'team_lead'), (3, 'E3', 'c', '3', DATE '1990-01-01', 'X3', 'engineer'),
    (4, 'E4', 'd', '4', DATE '1992-01-01', 'X4', 'engineer'), (5, 'E5', 'e', '5', DATE '1975-01-01', 'X5', 'investigator');
INSERT INTO Team VALUES (1, 'core', 2);
INSERT INTO Membership VALUES (3, 1), (4, 1);
INSERT INTO Vendor VALUES (1, 'payroll_provider', true), (2, 'benefits_broker', true), (3, 'background_checker', false);
INSERT INTO Payslip VALUES (1, 3, '2024-01', 5000, 3500);
INSERT INTO PerformanceReview VALUES (1, 3, 4, 'solid');
INSERT INTO Grievance VALUES (1, 4, 5, DATE '2024-02-02', 'overtime');
INSERT INTO SickNote VALUES (1, 4, 'flu', 3);
INSERT INTO Permission VALUES (3, 'benefits', true), (4, 'benefits', false);
