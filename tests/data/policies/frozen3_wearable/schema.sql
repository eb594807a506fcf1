-- A fitness-band company's member data: FROZEN domain (issue 27, FROZEN3). Never tune a rule on it.
CREATE TABLE Member (member_id INTEGER PRIMARY KEY, display_name VARCHAR, email VARCHAR, birth_year INTEGER,
    weight_kg DECIMAL(5, 1), marketing_opt_in BOOLEAN, created_at TIMESTAMP);
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, team VARCHAR);
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, contract_active BOOLEAN);
CREATE TABLE Band (band_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id), model VARCHAR,
    serial_no VARCHAR, paired_on DATE);
CREATE TABLE Subscription (subscription_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    plan VARCHAR, status VARCHAR, started_on DATE);
CREATE TABLE CoachAssignment (member_id INTEGER REFERENCES Member(member_id),
    coach_id INTEGER REFERENCES Staff(staff_id), PRIMARY KEY (member_id, coach_id));
CREATE TABLE HeartRate (reading_id INTEGER PRIMARY KEY, band_id INTEGER REFERENCES Band(band_id),
    taken_at TIMESTAMP, bpm INTEGER);
CREATE TABLE SleepRecord (sleep_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id), night DATE,
    minutes_asleep INTEGER, score INTEGER);
CREATE TABLE Workout (workout_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    activity VARCHAR, started_at TIMESTAMP, duration_min INTEGER, calories INTEGER, route_polyline VARCHAR);
CREATE TABLE DailySteps (step_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id), day DATE,
    steps INTEGER);
CREATE TABLE PaymentMethod (method_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    card_type VARCHAR, last4 VARCHAR, billing_zip VARCHAR);
CREATE TABLE Connection (member_id INTEGER REFERENCES Member(member_id),
    partner_id INTEGER REFERENCES Partner(partner_id), enabled BOOLEAN, PRIMARY KEY (member_id, partner_id));
CREATE TABLE StudyEnrollment (member_id INTEGER REFERENCES Member(member_id),
    partner_id INTEGER REFERENCES Partner(partner_id), joined BOOLEAN, PRIMARY KEY (member_id, partner_id));
CREATE TABLE Friendship (member_id INTEGER REFERENCES Member(member_id),
    friend_id INTEGER REFERENCES Member(member_id), accepted BOOLEAN, PRIMARY KEY (member_id, friend_id));
INSERT INTO Member VALUES (1, 'M1', 'm1@example.com', 1988, 71.5, true, TIMESTAMP '2023-01-01 10:00:00'),
    (2, 'M2', 'm2@example.com', 1995, 58.0, false, TIMESTAMP '2023-03-01 09:00:00'),
    (3, 'M3', 'm3@example.com', 1979, 90.2, true, TIMESTAMP '2023-06-01 08:00:00');
INSERT INTO Staff VALUES (1, 'C1', 'coaching'), (2, 'S1', 'support'), (3, 'B1', 'billing'), (4, 'D1', 'data_science'),
    (5, 'K1', 'marketing');
INSERT INTO Partner VALUES (1, 'Globex Wellness', 'employer', true), (2, 'SafeLife', 'insurer', true),
    (3, 'Sleep Lab U', 'research', true), (4, 'IronGym', 'gym', true), (5, 'AdCo', 'advertiser', true);
INSERT INTO Band VALUES (1, 1, 'Pulse 3', 'SN-0001', DATE '2023-01-02'), (2, 2, 'Pulse 2', 'SN-0002', DATE '2023-03-02'),
    (3, 3, 'Pulse 3', 'SN-0003', DATE '2023-06-02');
INSERT INTO Subscription VALUES (1, 1, 'premium', 'active', DATE '2023-01-01'),
    (2, 2, 'free', 'active', DATE '2023-03-01'), (3, 3, 'premium', 'cancelled', DATE '2023-06-01');
INSERT INTO CoachAssignment VALUES (1, 1), (3, 1);
INSERT INTO HeartRate VALUES (1, 1, TIMESTAMP '2024-01-01 07:00:00', 62), (2, 2, TIMESTAMP '2024-01-01 07:05:00', 70);
INSERT INTO SleepRecord VALUES (1, 1, DATE '2024-01-01', 420, 82), (2, 3, DATE '2024-01-01', 360, 65);
INSERT INTO Workout VALUES (1, 1, 'run', TIMESTAMP '2024-01-02 18:00:00', 35, 380, 'enc:abc'),
    (2, 2, 'cycle', TIMESTAMP '2024-01-03 07:30:00', 60, 520, 'enc:def');
INSERT INTO DailySteps VALUES (1, 1, DATE '2024-01-01', 10400), (2, 2, DATE '2024-01-01', 6200);
INSERT INTO PaymentMethod VALUES (1, 1, 'visa', '4242', '97201'), (2, 3, 'mastercard', '5100', '10001');
INSERT INTO Connection VALUES (1, 1, true), (2, 1, false), (1, 5, false);
INSERT INTO StudyEnrollment VALUES (1, 3, true), (3, 3, false);
INSERT INTO Friendship VALUES (1, 2, true), (2, 1, true), (3, 1, false);
