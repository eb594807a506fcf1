-- A ride-hailing company's rider data: FROZEN domain, round 2 (issue 27, POLICY8). Written, with its text and gold,
-- before the offline extractor ever ran on it; never used to write or tune a rule. SHA-256 pinned in
-- benchmarks/cql_frozen.py.
CREATE TABLE Rider (rider_id INTEGER PRIMARY KEY, full_name VARCHAR, phone VARCHAR, email VARCHAR,
    home_address VARCHAR, date_of_birth DATE);
CREATE TABLE Driver (driver_id INTEGER PRIMARY KEY, full_name VARCHAR, licence_number VARCHAR, vehicle_plate VARCHAR,
    rating DECIMAL(3, 2));
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, department VARCHAR);
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, contract_active BOOLEAN);
CREATE TABLE Trip (trip_id INTEGER PRIMARY KEY, rider_id INTEGER REFERENCES Rider(rider_id),
    driver_id INTEGER REFERENCES Driver(driver_id), pickup_location VARCHAR, dropoff_location VARCHAR,
    requested_at TIMESTAMP, fare DECIMAL(8, 2), status VARCHAR);
CREATE TABLE LocationTrace (trace_id INTEGER PRIMARY KEY, trip_id INTEGER REFERENCES Trip(trip_id),
    recorded_at TIMESTAMP, latitude DOUBLE, longitude DOUBLE);
CREATE TABLE PaymentMethod (method_id INTEGER PRIMARY KEY, rider_id INTEGER REFERENCES Rider(rider_id),
    card_last4 VARCHAR, card_expiry VARCHAR, billing_postcode VARCHAR);
CREATE TABLE SupportCase (case_id INTEGER PRIMARY KEY, rider_id INTEGER REFERENCES Rider(rider_id),
    agent_id INTEGER REFERENCES Staff(staff_id), opened_at TIMESTAMP, status VARCHAR);
CREATE TABLE SafetyReport (report_id INTEGER PRIMARY KEY, trip_id INTEGER REFERENCES Trip(trip_id),
    rider_id INTEGER REFERENCES Rider(rider_id), investigator_id INTEGER REFERENCES Staff(staff_id),
    filed_at TIMESTAMP, description VARCHAR);
CREATE TABLE Consent (consent_id INTEGER PRIMARY KEY, rider_id INTEGER REFERENCES Rider(rider_id), topic VARCHAR,
    granted BOOLEAN);
INSERT INTO Rider VALUES (1, 'R1', '0711-1', 'r1@x', 'a', DATE '1988-04-05'), (2, 'R2', '0711-2', 'r2@x', 'b', DATE '1995-09-10'),
    (3, 'R3', '0711-3', 'r3@x', 'c', DATE '2001-12-24');
INSERT INTO Driver VALUES (1, 'D1', 'L-100', 'KR-01', 4.85), (2, 'D2', 'L-200', 'KR-02', 4.60);
INSERT INTO Staff VALUES (1, 'S1', 'support'), (2, 'S2', 'safety'), (3, 'S3', 'analytics'), (4, 'S4', 'marketing');
INSERT INTO Partner VALUES (1, 'PayCo', 'payment_processor', true), (2, 'AdNet', 'advertiser', true),
    (3, 'SureCover', 'insurer', false), (4, 'City Police', 'law_enforcement', true);
INSERT INTO Trip VALUES (1, 1, 1, 'Station Rd', 'High St', TIMESTAMP '2024-09-02 08:10:00', 12.40, 'completed'),
    (2, 2, 2, 'Airport', 'Hotel Row', TIMESTAMP '2024-09-03 22:45:00', 38.00, 'in_progress'),
    (3, 3, 1, 'Park Ln', 'Mill St', TIMESTAMP '2024-09-04 13:05:00', 9.10, 'cancelled');
INSERT INTO LocationTrace VALUES (1, 1, TIMESTAMP '2024-09-02 08:12:00', 51.50, -0.12),
    (2, 2, TIMESTAMP '2024-09-03 22:50:00', 51.47, -0.45);
INSERT INTO PaymentMethod VALUES (1, 1, '4242', '11/27', 'AB1'), (2, 2, '5555', '03/26', 'CD2');
INSERT INTO SupportCase VALUES (1, 1, 1, TIMESTAMP '2024-09-02 10:00:00', 'open'), (2, 3, 1, TIMESTAMP '2024-09-05 09:30:00', 'closed');
INSERT INTO SafetyReport VALUES (1, 2, 2, 2, TIMESTAMP '2024-09-04 07:00:00', 'unsafe driving');
INSERT INTO Consent VALUES (1, 1, 'promotional_offers', true), (2, 2, 'promotional_offers', false), (3, 3, 'surveys', true);
