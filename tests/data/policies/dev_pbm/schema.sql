-- A pharmacy benefit manager's member data: DEVELOPMENT domain of the offline policy extractor (issue 27).
-- Written, with its gold, after the dev_biobank fixes and scored once before any change made from it.
-- Not frozen: its figures are development figures.
CREATE TABLE Member (member_id INTEGER PRIMARY KEY, full_name VARCHAR, date_of_birth DATE, address VARCHAR,
    phone VARCHAR, email VARCHAR);
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, department VARCHAR);
CREATE TABLE Pharmacy (pharmacy_id INTEGER PRIMARY KEY, name VARCHAR, network_status VARCHAR, contract_active BOOLEAN);
CREATE TABLE Prescriber (prescriber_id INTEGER PRIMARY KEY, name VARCHAR, specialty VARCHAR);
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, agreement_active BOOLEAN);
CREATE TABLE Claim (claim_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    pharmacy_id INTEGER REFERENCES Pharmacy(pharmacy_id), drug_code VARCHAR, amount DECIMAL(10, 2), filled_on DATE);
CREATE TABLE Prescription (rx_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    prescriber_id INTEGER REFERENCES Prescriber(prescriber_id), drug_name VARCHAR, dosage VARCHAR, refills INTEGER);
CREATE TABLE PriorAuthorization (auth_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    drug_name VARCHAR, approved BOOLEAN, reviewed_by INTEGER REFERENCES Staff(staff_id));
CREATE TABLE MemberConsent (consent_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    purpose VARCHAR, granted BOOLEAN);
CREATE TABLE CaseAssignment (staff_id INTEGER REFERENCES Staff(staff_id), member_id INTEGER REFERENCES Member(member_id),
    opened_on DATE);
INSERT INTO Member VALUES (1, 'M1', DATE '1950-01-01', 'a', '555-1', 'm1@x'), (2, 'M2', DATE '1985-06-15', 'b', '555-2', 'm2@x'),
    (3, 'M3', DATE '2001-09-09', 'c', '555-3', 'm3@x');
INSERT INTO Staff VALUES (1, 'S1', 'pharmacist'), (2, 'S2', 'claims_analyst'), (3, 'S3', 'customer_service'),
    (4, 'S4', 'fraud_investigator'), (5, 'S5', 'marketing');
INSERT INTO Pharmacy VALUES (1, 'Ph1', 'in_network', true), (2, 'Ph2', 'out_of_network', false), (3, 'Ph3', 'in_network', false);
INSERT INTO Prescriber VALUES (1, 'Dr A', 'cardiology'), (2, 'Dr B', 'oncology');
INSERT INTO Partner VALUES (1, 'Pharma Co', 'manufacturer', true), (2, 'Data Co', 'data_broker', false),
    (3, 'Big Co', 'employer', true), (4, 'Police', 'law_enforcement', true);
INSERT INTO Claim VALUES (1, 1, 1, 'N01', 12.50, DATE '2024-01-03'), (2, 2, 2, 'N02', 80.00, DATE '2024-02-03');
INSERT INTO Prescription VALUES (1, 1, 1, 'drug a', '10mg', 2), (2, 3, 2, 'drug b', '5mg', 0);
INSERT INTO PriorAuthorization VALUES (1, 1, 'drug a', true, 1), (2, 2, 'drug c', false, 1);
INSERT INTO MemberConsent VALUES (1, 1, 'research', true), (2, 2, 'research', false), (3, 3, 'marketing', true);
INSERT INTO CaseAssignment VALUES (3, 1, DATE '2024-03-01'), (3, 2, DATE '2024-03-02');
