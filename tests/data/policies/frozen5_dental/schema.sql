-- A dental practice group's patient records: FROZEN text of round 5 (issue 27, FROZEN5). Written, with its gold,
-- after the offline extractor of commit 7eccc2b and pinned before the extractor first ran on it.
CREATE TABLE Patient (patient_id INTEGER PRIMARY KEY, full_name VARCHAR, date_of_birth DATE, home_address VARCHAR,
    phone VARCHAR, email VARCHAR, medical_history VARCHAR);
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, job_title VARCHAR, practice VARCHAR);
CREATE TABLE ExternalParty (party_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, agreement_active BOOLEAN);
CREATE TABLE Appointment (appointment_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES Patient(patient_id),
    staff_id INTEGER REFERENCES Staff(staff_id), starts_at TIMESTAMP, status VARCHAR);
CREATE TABLE TreatmentNote (note_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES Patient(patient_id),
    staff_id INTEGER REFERENCES Staff(staff_id), written_on DATE, note_text VARCHAR, treatment_code VARCHAR);
CREATE TABLE DentalChart (chart_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES Patient(patient_id),
    tooth VARCHAR, tooth_status VARCHAR, updated_on DATE);
CREATE TABLE XRay (xray_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES Patient(patient_id), taken_on DATE,
    region VARCHAR, image_path VARCHAR);
CREATE TABLE Referral (referral_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES Patient(patient_id),
    party_id INTEGER REFERENCES ExternalParty(party_id), referred_on DATE, reason VARCHAR);
CREATE TABLE LabOrder (order_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES Patient(patient_id),
    party_id INTEGER REFERENCES ExternalParty(party_id), sent_on DATE, impression_scan VARCHAR, shade VARCHAR);
CREATE TABLE Invoice (invoice_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES Patient(patient_id),
    issued_on DATE, amount DECIMAL(10, 2), paid BOOLEAN, days_overdue INTEGER);
CREATE TABLE ClaimAuthorisation (auth_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES Patient(patient_id),
    party_id INTEGER REFERENCES ExternalParty(party_id), signed_on DATE);
CREATE TABLE NewsletterConsent (consent_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES Patient(patient_id),
    agreed BOOLEAN, recorded_on DATE);
COMMENT ON COLUMN Patient.medical_history IS 'Allergies, medicines and conditions declared by the patient';
COMMENT ON COLUMN Appointment.starts_at IS 'Booked start time';
COMMENT ON COLUMN TreatmentNote.treatment_code IS 'Fee schedule code of the procedure';
COMMENT ON COLUMN XRay.image_path IS 'Radiograph file location';
COMMENT ON COLUMN LabOrder.impression_scan IS 'Intraoral scan file sent to the lab';
COMMENT ON COLUMN Invoice.paid IS 'True once the invoice is settled';
INSERT INTO Patient VALUES (1, 'P1', DATE '1980-04-02', 'a', '0711-1', 'p1@x', 'penicillin allergy'),
    (2, 'P2', DATE '1995-09-17', 'b', '0711-2', 'p2@x', 'none'), (3, 'P3', DATE '2010-01-30', 'c', '0711-3', 'p3@x', 'asthma');
INSERT INTO Staff VALUES (1, 'S1', 'dentist', 'North'), (2, 'S2', 'hygienist', 'North'), (3, 'S3', 'dental_nurse', 'North'),
    (4, 'S4', 'receptionist', 'South'), (5, 'S5', 'practice_manager', 'South'), (6, 'S6', 'dentist', 'South');
INSERT INTO ExternalParty VALUES (1, 'Jaw Clinic', 'specialist', true), (2, 'Crown Lab', 'dental_lab', true),
    (3, 'Old Lab', 'dental_lab', false), (4, 'Health Mutual', 'insurer', true), (5, 'Spark Agency', 'marketing_agency', true),
    (6, 'Recover Ltd', 'debt_collector', true);
INSERT INTO Appointment VALUES (1, 1, 1, TIMESTAMP '2024-05-02 09:00:00', 'booked'),
    (2, 2, 2, TIMESTAMP '2024-05-02 10:00:00', 'booked'), (3, 3, 6, TIMESTAMP '2024-05-03 11:00:00', 'attended');
INSERT INTO TreatmentNote VALUES (1, 1, 1, DATE '2024-04-01', 'filling upper left 6', 'D2391'),
    (2, 2, 2, DATE '2024-04-03', 'scale and polish', 'D1110'), (3, 3, 6, DATE '2024-04-05', 'extraction', 'D7140');
INSERT INTO DentalChart VALUES (1, 1, 'UL6', 'filled', DATE '2024-04-01'), (2, 2, 'LR7', 'sound', DATE '2024-04-03');
INSERT INTO XRay VALUES (1, 1, DATE '2024-04-01', 'upper left', 'xr/1.png'), (2, 3, DATE '2024-04-05', 'lower right', 'xr/2.png');
INSERT INTO Referral VALUES (1, 3, 1, DATE '2024-04-06', 'wisdom tooth');
INSERT INTO LabOrder VALUES (1, 1, 2, DATE '2024-04-02', 'scan/1.stl', 'A2'), (2, 2, 3, DATE '2024-04-04', 'scan/2.stl', 'B1');
INSERT INTO Invoice VALUES (1, 1, DATE '2024-01-10', 120.00, false, 110), (2, 2, DATE '2024-04-03', 60.00, true, 0),
    (3, 3, DATE '2024-04-05', 95.00, false, 20);
INSERT INTO ClaimAuthorisation VALUES (1, 2, 4, DATE '2024-04-03');
INSERT INTO NewsletterConsent VALUES (1, 1, true, DATE '2024-01-01'), (2, 2, false, DATE '2024-01-01');
