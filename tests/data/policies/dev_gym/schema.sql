-- A gym chain's member data: DEVELOPMENT domain of the offline policy extractor (issue 27, POLICY12). Written,
-- with its gold, before the extractor first ran on it; its first score is an unseen figure, later ones are
-- development figures. Not frozen.
CREATE TABLE Club (club_id INTEGER PRIMARY KEY, name VARCHAR, city VARCHAR);
CREATE TABLE Member (member_id INTEGER PRIMARY KEY, full_name VARCHAR, email VARCHAR, phone_number VARCHAR,
    date_of_birth DATE, home_address VARCHAR, home_club_id INTEGER REFERENCES Club(club_id), offers_opt_in BOOLEAN);
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, club_id INTEGER REFERENCES Club(club_id),
    role VARCHAR CHECK (role IN ('trainer', 'front_desk', 'club_manager', 'nutritionist', 'sales', 'marketing')));
CREATE TABLE CorporateClient (client_id INTEGER PRIMARY KEY, company_name VARCHAR, contract_active BOOLEAN);
CREATE TABLE Membership (membership_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    plan VARCHAR, monthly_fee DECIMAL(8, 2), started_on DATE,
    paid_by_client_id INTEGER REFERENCES CorporateClient(client_id));
CREATE TABLE Coaching (coaching_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    coach_id INTEGER REFERENCES Staff(staff_id), since DATE);
CREATE TABLE WorkoutPlan (plan_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    goals VARCHAR, exercises VARCHAR, updated_on DATE);
CREATE TABLE HealthQuestionnaire (questionnaire_id INTEGER PRIMARY KEY,
    member_id INTEGER REFERENCES Member(member_id), conditions VARCHAR, medications VARCHAR, injuries VARCHAR,
    completed_on DATE);
CREATE TABLE BodyMeasurement (measurement_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    measured_on DATE, weight_kg DECIMAL(5, 1), body_fat_pct DECIMAL(4, 1));
CREATE TABLE CheckIn (checkin_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    club_id INTEGER REFERENCES Club(club_id), checked_in_at TIMESTAMP);
CREATE TABLE Payment (payment_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    amount DECIMAL(8, 2), paid_on DATE, card_last4 VARCHAR);
CREATE TABLE Physiotherapist (physio_id INTEGER PRIMARY KEY, name VARCHAR, clinic VARCHAR);
CREATE TABLE Referral (referral_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    physio_id INTEGER REFERENCES Physiotherapist(physio_id), referred_on DATE);
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR);
INSERT INTO Club VALUES (1, 'PeakForm Central', 'Leeds'), (2, 'PeakForm Riverside', 'York');
INSERT INTO Member VALUES (1, 'Ann Lee', 'ann@x', '07700-11', DATE '1988-03-04', '1 Oak Road', 1, true),
    (2, 'Bob Roy', 'bob@x', '07700-12', DATE '1975-09-10', '2 Elm Street', 1, false),
    (3, 'Cai Wu', 'cai@x', '07700-13', DATE '2001-12-24', '3 Ash Lane', 2, true);
INSERT INTO Staff VALUES (1, 'T1', 1, 'trainer'), (2, 'T2', 2, 'trainer'), (3, 'F1', 1, 'front_desk'),
    (4, 'M1', 1, 'club_manager'), (5, 'N1', 2, 'nutritionist'), (6, 'S1', 1, 'sales'), (7, 'K1', 1, 'marketing');
INSERT INTO CorporateClient VALUES (1, 'Acorn Logistics', true), (2, 'Birch Bank', false);
INSERT INTO Membership VALUES (1, 1, 'standard', 35.00, DATE '2023-01-01', NULL),
    (2, 2, 'corporate', 25.00, DATE '2023-06-01', 1), (3, 3, 'off_peak', 22.00, DATE '2024-02-01', NULL);
INSERT INTO Coaching VALUES (1, 1, 1, DATE '2024-01-05'), (2, 3, 2, DATE '2024-02-10'), (3, 3, 5, DATE '2024-03-01');
INSERT INTO WorkoutPlan VALUES (1, 1, 'run 10k', 'intervals; squats', DATE '2024-03-01'),
    (2, 3, 'strength', 'deadlift; rows', DATE '2024-03-02');
INSERT INTO HealthQuestionnaire VALUES (1, 1, 'asthma', 'inhaler', 'none', DATE '2023-01-01'),
    (2, 2, 'none', 'none', 'knee surgery 2019', DATE '2023-06-01');
INSERT INTO BodyMeasurement VALUES (1, 1, DATE '2024-03-01', 64.5, 24.0), (2, 3, DATE '2024-03-02', 80.1, 18.5);
INSERT INTO CheckIn VALUES (1, 1, 1, TIMESTAMP '2024-03-05 07:10'), (2, 2, 1, TIMESTAMP '2024-03-05 18:40'),
    (3, 3, 2, TIMESTAMP '2024-03-06 12:00');
INSERT INTO Payment VALUES (1, 1, 35.00, DATE '2024-03-01', '4242'), (2, 3, 22.00, DATE '2024-03-01', '1881');
INSERT INTO Physiotherapist VALUES (1, 'P. Shah', 'Back in Motion'), (2, 'D. Okafor', 'City Physio');
INSERT INTO Referral VALUES (1, 2, 1, DATE '2024-02-20');
INSERT INTO Partner VALUES (1, 'PayFlow', 'payment_processor'), (2, 'Shield Health', 'insurer'),
    (3, 'AdReach', 'advertiser');
