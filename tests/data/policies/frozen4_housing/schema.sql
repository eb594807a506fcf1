-- A housing association's tenant records: FROZEN text of round 4 (issue 27, FROZEN4). Written, with its gold, after
-- the offline extractor of commit 759d0e5 and pinned before the extractor's next changes; never used to write a rule.
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, job VARCHAR, patch VARCHAR);
CREATE TABLE BoardMember (member_id INTEGER PRIMARY KEY, name VARCHAR, elected_on DATE);
CREATE TABLE Tenant (tenant_id INTEGER PRIMARY KEY, full_name VARCHAR, phone VARCHAR, email VARCHAR,
    date_of_birth DATE, ni_number VARCHAR, support_needs VARCHAR);
CREATE TABLE Property (property_id INTEGER PRIMARY KEY, address VARCHAR, bedrooms INTEGER);
CREATE TABLE Tenancy (tenancy_id INTEGER PRIMARY KEY, tenant_id INTEGER REFERENCES Tenant(tenant_id),
    property_id INTEGER REFERENCES Property(property_id), officer_id INTEGER REFERENCES Staff(staff_id),
    start_date DATE, end_date DATE, status VARCHAR);
CREATE TABLE RentAccount (account_id INTEGER PRIMARY KEY, tenant_id INTEGER REFERENCES Tenant(tenant_id),
    balance DECIMAL(10, 2), arrears DECIMAL(10, 2), payment_plan VARCHAR);
CREATE TABLE SupportAssignment (assignment_id INTEGER PRIMARY KEY, worker_id INTEGER REFERENCES Staff(staff_id),
    tenant_id INTEGER REFERENCES Tenant(tenant_id), assigned_on DATE);
CREATE TABLE RepairRequest (repair_id INTEGER PRIMARY KEY, tenancy_id INTEGER REFERENCES Tenancy(tenancy_id),
    reported_on DATE, description VARCHAR, priority VARCHAR, access_notes VARCHAR, status VARCHAR);
CREATE TABLE Contractor (contractor_id INTEGER PRIMARY KEY, name VARCHAR, trade VARCHAR, contract_active BOOLEAN);
CREATE TABLE WorkOrder (order_id INTEGER PRIMARY KEY, repair_id INTEGER REFERENCES RepairRequest(repair_id),
    contractor_id INTEGER REFERENCES Contractor(contractor_id), issued_on DATE);
CREATE TABLE AsbCase (case_id INTEGER PRIMARY KEY, tenant_id INTEGER REFERENCES Tenant(tenant_id),
    officer_id INTEGER REFERENCES Staff(staff_id), opened_on DATE, complaint_details VARCHAR, status VARCHAR);
CREATE TABLE Agency (agency_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR);
CREATE TABLE Consent (consent_id INTEGER PRIMARY KEY, tenant_id INTEGER REFERENCES Tenant(tenant_id),
    agency_id INTEGER REFERENCES Agency(agency_id), given_on DATE, granted BOOLEAN);
COMMENT ON COLUMN Tenant.ni_number IS 'National Insurance number';
COMMENT ON COLUMN Tenant.support_needs IS 'vulnerabilities and support needs recorded at sign-up';
COMMENT ON COLUMN RentAccount.arrears IS 'rent owed and overdue';
COMMENT ON COLUMN AsbCase.status IS 'open or closed';
COMMENT ON COLUMN Staff.job IS 'housing_officer, income_officer, tenancy_support, repairs or asb_officer';
INSERT INTO Staff VALUES (1, 'S1', 'housing_officer', 'north'), (2, 'S2', 'income_officer', 'north'),
    (3, 'S3', 'tenancy_support', 'south'), (4, 'S4', 'repairs', 'south'), (5, 'S5', 'asb_officer', 'north');
INSERT INTO BoardMember VALUES (1, 'B1', DATE '2022-09-01'), (2, 'B2', DATE '2023-09-01');
INSERT INTO Tenant VALUES (1, 'T1', '0161-1', 't1@x', DATE '1961-04-02', 'AB123456C', 'hearing impairment'),
    (2, 'T2', '0161-2', 't2@x', DATE '1988-10-19', 'CD654321A', NULL),
    (3, 'T3', '0161-3', NULL, DATE '1999-01-30', 'EF112233B', 'mental health support');
INSERT INTO Property VALUES (1, '1 Mill Lane', 2), (2, '2 Mill Lane', 3), (3, '5 Quay Street', 1);
INSERT INTO Tenancy VALUES (1, 1, 1, 1, DATE '2010-05-01', NULL, 'active'), (2, 2, 2, 1, DATE '2019-02-01', NULL, 'active'),
    (3, 3, 3, 1, DATE '2021-07-01', DATE '2024-01-31', 'ended');
INSERT INTO RentAccount VALUES (1, 1, 0.00, 0.00, NULL), (2, 2, -310.50, 310.50, 'weekly 10.00'), (3, 3, -45.00, 45.00, NULL);
INSERT INTO SupportAssignment VALUES (1, 3, 1, DATE '2023-02-01'), (2, 3, 3, DATE '2022-01-10');
INSERT INTO RepairRequest VALUES (1, 1, DATE '2024-02-03', 'leaking tap', 'routine', 'key with neighbour', 'open'),
    (2, 2, DATE '2024-02-10', 'broken boiler', 'urgent', 'dog in garden', 'done');
INSERT INTO Contractor VALUES (1, 'Pipe Co', 'plumbing', true), (2, 'Heat Co', 'heating', false);
INSERT INTO WorkOrder VALUES (1, 1, 1, DATE '2024-02-04'), (2, 2, 2, DATE '2024-02-11');
INSERT INTO AsbCase VALUES (1, 2, 5, DATE '2024-01-15', 'noise at night', 'open'), (2, 3, 5, DATE '2023-06-01', 'damage', 'closed');
INSERT INTO Agency VALUES (1, 'City Police', 'police'), (2, 'Money Help', 'debt_advice'), (3, 'City Council', 'council');
INSERT INTO Consent VALUES (1, 2, 2, DATE '2024-01-20', true), (2, 3, 2, DATE '2023-11-02', false);
