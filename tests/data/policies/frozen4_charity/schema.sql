-- A charity's supporter (donor) data: FROZEN text of round 4 (issue 27, FROZEN4). Written, with its gold, after the
-- offline extractor of commit 759d0e5 and pinned before the extractor's next changes; never used to write a rule.
CREATE TABLE Donor (donor_id INTEGER PRIMARY KEY, full_name VARCHAR, email VARCHAR, phone VARCHAR,
    postal_address VARCHAR, date_of_birth DATE, gift_aid_declared BOOLEAN, wealth_score INTEGER);
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, team VARCHAR);
CREATE TABLE Volunteer (volunteer_id INTEGER PRIMARY KEY, name VARCHAR, joined_on DATE);
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, contract_active BOOLEAN);
CREATE TABLE Donation (donation_id INTEGER PRIMARY KEY, donor_id INTEGER REFERENCES Donor(donor_id),
    amount DECIMAL(10, 2), donated_on DATE, campaign VARCHAR, payment_method VARCHAR);
CREATE TABLE GiftAgreement (agreement_id INTEGER PRIMARY KEY, donor_id INTEGER REFERENCES Donor(donor_id),
    monthly_amount DECIMAL(10, 2), account_number VARCHAR, sort_code VARCHAR, status VARCHAR);
CREATE TABLE Legacy (legacy_id INTEGER PRIMARY KEY, donor_id INTEGER REFERENCES Donor(donor_id),
    pledged_on DATE, estimated_value DECIMAL(12, 2), notes VARCHAR);
CREATE TABLE Event (event_id INTEGER PRIMARY KEY, title VARCHAR, held_on DATE);
CREATE TABLE EventRegistration (registration_id INTEGER PRIMARY KEY, donor_id INTEGER REFERENCES Donor(donor_id),
    event_id INTEGER REFERENCES Event(event_id), dietary_requirements VARCHAR, emergency_contact VARCHAR);
CREATE TABLE VolunteerShift (shift_id INTEGER PRIMARY KEY, volunteer_id INTEGER REFERENCES Volunteer(volunteer_id),
    event_id INTEGER REFERENCES Event(event_id), role VARCHAR);
CREATE TABLE Permission (permission_id INTEGER PRIMARY KEY, donor_id INTEGER REFERENCES Donor(donor_id),
    topic VARCHAR, granted BOOLEAN, recorded_on DATE);
COMMENT ON COLUMN Donor.wealth_score IS 'wealth screening score from prospect research';
COMMENT ON COLUMN GiftAgreement.status IS 'active, paused or cancelled';
COMMENT ON COLUMN Permission.topic IS 'post, email, phone or wealth_research';
INSERT INTO Donor VALUES (1, 'D1', 'd1@x', '0207-1', '1 High St', DATE '1950-03-04', true, 7),
    (2, 'D2', 'd2@x', '0207-2', '2 High St', DATE '1985-08-21', false, 3),
    (3, 'D3', NULL, '0207-3', '3 Low Rd', DATE '2001-12-12', true, NULL);
INSERT INTO Staff VALUES (1, 'S1', 'fundraising'), (2, 'S2', 'finance'), (3, 'S3', 'legacy'),
    (4, 'S4', 'prospect_research'), (5, 'S5', 'events'), (6, 'S6', 'supporter_care'), (7, 'S7', 'data_analytics');
INSERT INTO Volunteer VALUES (1, 'V1', DATE '2022-05-01'), (2, 'V2', DATE '2023-09-15');
INSERT INTO Partner VALUES (1, 'Print Co', 'mailing_house', true), (2, 'Tax Office', 'tax_office', true),
    (3, 'Big Bank', 'corporate_partner', true), (4, 'Old Print', 'mailing_house', false);
INSERT INTO Donation VALUES (1, 1, 25.00, DATE '2024-01-05', 'winter appeal', 'card'),
    (2, 1, 10.00, DATE '2024-02-05', 'regular giving', 'direct_debit'), (3, 2, 100.00, DATE '2024-02-14', 'fun run', 'cash');
INSERT INTO GiftAgreement VALUES (1, 1, 10.00, '12345678', '12-34-56', 'active'), (2, 3, 5.00, '87654321', '65-43-21', 'cancelled');
INSERT INTO Legacy VALUES (1, 1, DATE '2019-06-01', 20000.00, 'residuary'), (2, 2, DATE '2023-03-03', 5000.00, NULL);
INSERT INTO Event VALUES (1, 'Fun Run', DATE '2024-05-12'), (2, 'Gala Dinner', DATE '2024-11-20');
INSERT INTO EventRegistration VALUES (1, 2, 1, NULL, 'partner 0207-9'), (2, 1, 2, 'vegetarian', 'son 0207-8');
INSERT INTO VolunteerShift VALUES (1, 1, 1, 'marshal'), (2, 2, 2, 'welcome desk');
INSERT INTO Permission VALUES (1, 1, 'post', true, DATE '2023-01-01'), (2, 1, 'wealth_research', true, DATE '2023-01-01'),
    (3, 2, 'email', true, DATE '2023-05-05'), (4, 3, 'post', false, DATE '2024-01-01');
