-- A hotel group's guest data: FROZEN text of round 6 (issue 27, FROZEN6). Written, with its gold, after the offline
-- extractor's rules of commit ef3f76f and pinned (SHA-256, benchmarks/cql_frozen.py) before the extractor ran on it.
CREATE TABLE Hotel (hotel_id INTEGER PRIMARY KEY, name VARCHAR, city VARCHAR);
CREATE TABLE Guest (guest_id INTEGER PRIMARY KEY, full_name VARCHAR, email VARCHAR, mobile VARCHAR,
    home_address VARCHAR, birth_date DATE, passport_no VARCHAR, passport_country VARCHAR, loyalty_tier VARCHAR);
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, department VARCHAR,
    hotel_id INTEGER REFERENCES Hotel(hotel_id));
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, contract_active BOOLEAN);
CREATE TABLE Booking (booking_id INTEGER PRIMARY KEY, guest_id INTEGER REFERENCES Guest(guest_id),
    hotel_id INTEGER REFERENCES Hotel(hotel_id), agent_id INTEGER REFERENCES Partner(partner_id),
    arrival_date DATE, departure_date DATE, room_no VARCHAR, nightly_rate DECIMAL(8, 2), special_requests VARCHAR,
    status VARCHAR);
CREATE TABLE FolioCharge (charge_id INTEGER PRIMARY KEY, booking_id INTEGER REFERENCES Booking(booking_id),
    outlet VARCHAR, amount DECIMAL(8, 2), posted_at TIMESTAMP);
CREATE TABLE PaymentCard (card_id INTEGER PRIMARY KEY, guest_id INTEGER REFERENCES Guest(guest_id),
    pan_last4 VARCHAR, exp_month_year VARCHAR, cardholder_name VARCHAR);
CREATE TABLE CleaningTask (task_id INTEGER PRIMARY KEY, booking_id INTEGER REFERENCES Booking(booking_id),
    staff_id INTEGER REFERENCES Staff(staff_id), task_date DATE);
CREATE TABLE SpaAppointment (appointment_id INTEGER PRIMARY KEY, guest_id INTEGER REFERENCES Guest(guest_id),
    partner_id INTEGER REFERENCES Partner(partner_id), treatment VARCHAR, starts_at TIMESTAMP);
CREATE TABLE MarketingConsent (consent_id INTEGER PRIMARY KEY, guest_id INTEGER REFERENCES Guest(guest_id),
    channel VARCHAR, granted BOOLEAN);
COMMENT ON COLUMN Guest.mobile IS 'Guest mobile / phone number, E.164';
COMMENT ON COLUMN Guest.passport_no IS 'Passport or national ID card number, scanned at check-in';
COMMENT ON COLUMN Staff.department IS 'front_desk, housekeeping, concierge, revenue, billing, marketing';
COMMENT ON COLUMN Booking.room_no IS 'Allocated room; NULL until allocation';
COMMENT ON COLUMN Booking.nightly_rate IS 'Rate actually charged per night, EUR, after discounts';
COMMENT ON COLUMN Booking.status IS 'confirmed | checked_in | checked_out | cancelled';
COMMENT ON COLUMN FolioCharge.outlet IS 'Point of sale: bar, restaurant, minibar, spa ...';
COMMENT ON COLUMN PaymentCard.pan_last4 IS 'Last 4 digits of the card PAN (full PAN held by the PSP only)';
COMMENT ON COLUMN PaymentCard.exp_month_year IS 'Card expiry MM/YY';
INSERT INTO Hotel VALUES (1, 'Harbourline Quay', 'Bristol'), (2, 'Harbourline Bay Resort', 'Falmouth');
INSERT INTO Guest VALUES
    (1, 'G1', 'g1@x', '+441', 'a', DATE '1980-04-01', 'P111', 'GB', 'gold'),
    (2, 'G2', 'g2@x', '+442', 'b', DATE '1992-09-12', 'P222', 'FR', 'none'),
    (3, 'G3', 'g3@x', '+443', 'c', DATE '1971-01-30', 'P333', 'DE', 'silver');
INSERT INTO Staff VALUES (1, 'S1', 'front_desk', 1), (2, 'S2', 'housekeeping', 1), (3, 'S3', 'concierge', 2),
    (4, 'S4', 'revenue', 1), (5, 'S5', 'billing', 1), (6, 'S6', 'marketing', 2), (7, 'S7', 'front_desk', 2);
INSERT INTO Partner VALUES (1, 'Trips Ltd', 'travel_agent', true), (2, 'Calm Spa', 'spa_operator', true),
    (3, 'Police', 'police', true), (4, 'AdCo', 'advertiser', true), (5, 'Old Spa', 'spa_operator', false);
INSERT INTO Booking VALUES
    (1, 1, 1, NULL, DATE '2024-05-01', DATE '2024-05-04', '101', 120.00, 'extra pillows', 'checked_in'),
    (2, 2, 2, 1, DATE '2024-05-02', DATE '2024-05-09', '12', 210.00, 'late check-out', 'checked_in'),
    (3, 3, 1, 1, DATE '2024-06-10', DATE '2024-06-12', NULL, 99.00, NULL, 'confirmed');
INSERT INTO FolioCharge VALUES (1, 1, 'bar', 14.50, TIMESTAMP '2024-05-01 21:00:00'),
    (2, 2, 'spa', 80.00, TIMESTAMP '2024-05-03 10:00:00');
INSERT INTO PaymentCard VALUES (1, 1, '4242', '08/27', 'G1'), (2, 2, '1881', '02/26', 'G2');
INSERT INTO CleaningTask VALUES (1, 1, 2, DATE '2024-05-02');
INSERT INTO SpaAppointment VALUES (1, 2, 2, 'massage', TIMESTAMP '2024-05-03 10:00:00'),
    (2, 1, 5, 'facial', TIMESTAMP '2024-05-02 15:00:00');
INSERT INTO MarketingConsent VALUES (1, 1, 'email', true), (2, 2, 'email', false), (3, 3, 'sms', true);
