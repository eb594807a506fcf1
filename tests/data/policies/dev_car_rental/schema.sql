-- A car rental firm's renter data: DEVELOPMENT domain of the offline policy extractor (issue 27, POLICY12).
-- Written, with its gold, before the extractor first ran on it; its first score is an unseen figure, later ones are
-- development figures. Not frozen.
CREATE TABLE Branch (branch_id INTEGER PRIMARY KEY, city VARCHAR);
CREATE TABLE Renter (renter_id INTEGER PRIMARY KEY, full_name VARCHAR, email VARCHAR, phone VARCHAR,
    home_address VARCHAR, licence_number VARCHAR, date_of_birth DATE, loyalty_member BOOLEAN,
    account_overdue BOOLEAN);
CREATE TABLE Employee (employee_id INTEGER PRIMARY KEY, name VARCHAR, branch_id INTEGER REFERENCES Branch(branch_id),
    position VARCHAR CHECK (position IN ('counter', 'call_centre', 'fleet_technician', 'claims', 'marketing',
    'branch_manager')));
CREATE TABLE Car (car_id INTEGER PRIMARY KEY, plate VARCHAR, model VARCHAR);
CREATE TABLE Rental (rental_id INTEGER PRIMARY KEY, renter_id INTEGER REFERENCES Renter(renter_id),
    car_id INTEGER REFERENCES Car(car_id), branch_id INTEGER REFERENCES Branch(branch_id),
    picked_up_at TIMESTAMP, returned_at TIMESTAMP, status VARCHAR);
CREATE TABLE TripPoint (point_id INTEGER PRIMARY KEY, rental_id INTEGER REFERENCES Rental(rental_id),
    recorded_at TIMESTAMP, latitude DOUBLE, longitude DOUBLE);
CREATE TABLE DamageReport (report_id INTEGER PRIMARY KEY, rental_id INTEGER REFERENCES Rental(rental_id),
    description VARCHAR, photo_url VARCHAR, reported_at TIMESTAMP);
CREATE TABLE Claim (claim_id INTEGER PRIMARY KEY, rental_id INTEGER REFERENCES Rental(rental_id),
    handler_id INTEGER REFERENCES Employee(employee_id), opened_on DATE, status VARCHAR);
CREATE TABLE Payment (payment_id INTEGER PRIMARY KEY, rental_id INTEGER REFERENCES Rental(rental_id),
    amount DECIMAL(8, 2), card_last4 VARCHAR, paid_at TIMESTAMP);
CREATE TABLE Insurer (insurer_id INTEGER PRIMARY KEY, name VARCHAR, policy_active BOOLEAN);
CREATE TABLE ThirdParty (third_party_id INTEGER PRIMARY KEY, name VARCHAR, type VARCHAR);
INSERT INTO Branch VALUES (1, 'Bristol'), (2, 'Cardiff');
INSERT INTO Renter VALUES (1, 'Dee Park', 'dee@x', '07800-1', '4 Quay St', 'PARKD701', DATE '1986-05-06', true, false),
    (2, 'Eli Moss', 'eli@x', '07800-2', '5 Mill Rd', 'MOSSE802', DATE '1999-01-02', false, true),
    (3, 'Fay Ng', 'fay@x', '07800-3', '6 Hill Ct', 'NGFAY903', DATE '1970-08-09', true, false);
INSERT INTO Employee VALUES (1, 'C1', 1, 'counter'), (2, 'C2', 2, 'counter'), (3, 'A1', 1, 'call_centre'),
    (4, 'F1', 1, 'fleet_technician'), (5, 'H1', 2, 'claims'), (6, 'K1', 1, 'marketing'), (7, 'B1', 1, 'branch_manager');
INSERT INTO Car VALUES (1, 'AB12 CDE', 'Corsa'), (2, 'FG34 HIJ', 'Golf');
INSERT INTO Rental VALUES (1, 1, 1, 1, TIMESTAMP '2024-04-01 09:00', TIMESTAMP '2024-04-03 17:00', 'returned'),
    (2, 2, 2, 2, TIMESTAMP '2024-04-05 10:00', NULL, 'open'),
    (3, 3, 1, 1, TIMESTAMP '2024-04-10 08:30', TIMESTAMP '2024-04-11 08:30', 'returned');
INSERT INTO TripPoint VALUES (1, 1, TIMESTAMP '2024-04-01 10:00', 51.45, -2.59), (2, 2, TIMESTAMP '2024-04-05 11:00', 51.48, -3.18);
INSERT INTO DamageReport VALUES (1, 1, 'scratch on rear door', 'img/1.jpg', TIMESTAMP '2024-04-03 17:10'),
    (2, 3, 'cracked windscreen', 'img/2.jpg', TIMESTAMP '2024-04-11 08:40');
INSERT INTO Claim VALUES (1, 3, 5, DATE '2024-04-12', 'open');
INSERT INTO Payment VALUES (1, 1, 120.00, '4242', TIMESTAMP '2024-04-01 09:05'),
    (2, 2, 95.50, '1881', TIMESTAMP '2024-04-05 10:05'), (3, 3, 60.00, '0005', TIMESTAMP '2024-04-10 08:35');
INSERT INTO Insurer VALUES (1, 'RoadSure', true), (2, 'OldCover', false);
INSERT INTO ThirdParty VALUES (1, 'County Police', 'police'), (2, 'ParkRight', 'parking_company'),
    (3, 'Recover Ltd', 'debt_collector'), (4, 'Body Shop One', 'repair_shop');
