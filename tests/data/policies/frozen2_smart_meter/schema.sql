-- An energy supplier's customer and smart-meter data: FROZEN domain, round 2 (issue 27, POLICY8). Written, with its
-- text and gold, before the offline extractor ever ran on it; never used to write or tune a rule. SHA-256 pinned in
-- benchmarks/cql_frozen.py.
CREATE TABLE Customer (customer_id INTEGER PRIMARY KEY, full_name VARCHAR, service_address VARCHAR, phone VARCHAR,
    email VARCHAR, account_number VARCHAR, in_arrears BOOLEAN);
CREATE TABLE Meter (meter_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES Customer(customer_id),
    serial_number VARCHAR, installed_on DATE);
CREATE TABLE MeterReading (reading_id INTEGER PRIMARY KEY, meter_id INTEGER REFERENCES Meter(meter_id),
    read_at TIMESTAMP, kwh DECIMAL(8, 3));
CREATE TABLE Bill (bill_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES Customer(customer_id), period VARCHAR,
    amount_due DECIMAL(10, 2), paid BOOLEAN);
CREATE TABLE DirectDebit (mandate_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES Customer(customer_id),
    account_holder VARCHAR, sort_code VARCHAR, account_last4 VARCHAR);
CREATE TABLE PriorityService (registration_id INTEGER PRIMARY KEY,
    customer_id INTEGER REFERENCES Customer(customer_id), needs VARCHAR, medical_equipment BOOLEAN, registered_on DATE);
CREATE TABLE Employee (employee_id INTEGER PRIMARY KEY, name VARCHAR, job VARCHAR);
CREATE TABLE WorkOrder (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES Customer(customer_id),
    technician_id INTEGER REFERENCES Employee(employee_id), scheduled_on DATE, status VARCHAR);
CREATE TABLE ThirdParty (party_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, contract_active BOOLEAN);
CREATE TABLE DataConsent (consent_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES Customer(customer_id),
    topic VARCHAR, granted BOOLEAN);
INSERT INTO Customer VALUES (1, 'C1', '1 Elm Rd', '0722-1', 'c1@x', 'A-001', false), (2, 'C2', '2 Oak Rd', '0722-2', 'c2@x', 'A-002', true),
    (3, 'C3', '3 Ash Rd', '0722-3', 'c3@x', 'A-003', false);
INSERT INTO Meter VALUES (1, 1, 'SM-1001', DATE '2022-05-01'), (2, 2, 'SM-1002', DATE '2023-01-15'), (3, 3, 'SM-1003', DATE '2023-08-20');
INSERT INTO MeterReading VALUES (1, 1, TIMESTAMP '2024-10-01 00:30:00', 0.412), (2, 1, TIMESTAMP '2024-10-01 01:00:00', 0.388),
    (3, 2, TIMESTAMP '2024-10-01 00:30:00', 1.250);
INSERT INTO Bill VALUES (1, 1, '2024-09', 84.20, true), (2, 2, '2024-09', 131.75, false), (3, 3, '2024-09', 56.10, true);
INSERT INTO DirectDebit VALUES (1, 1, 'C1', '20-00-01', '1234'), (2, 3, 'C3', '40-11-22', '9876');
INSERT INTO PriorityService VALUES (1, 2, 'home oxygen', true, DATE '2023-02-01');
INSERT INTO Employee VALUES (1, 'E1', 'call_centre'), (2, 'E2', 'field_technician'), (3, 'E3', 'energy_analyst'),
    (4, 'E4', 'credit_control'), (5, 'E5', 'marketing');
INSERT INTO WorkOrder VALUES (1, 1, 2, DATE '2024-10-03', 'open'), (2, 3, 2, DATE '2024-09-12', 'closed');
INSERT INTO ThirdParty VALUES (1, 'GridCo', 'network_operator', true), (2, 'CompareIt', 'price_comparison', true),
    (3, 'Recover Ltd', 'debt_collection', false);
INSERT INTO DataConsent VALUES (1, 1, 'data_sharing', true), (2, 2, 'marketing', true), (3, 3, 'marketing', false);
