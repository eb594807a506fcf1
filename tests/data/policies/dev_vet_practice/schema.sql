-- A veterinary practice's client and animal records: DEVELOPMENT domain of the offline policy extractor (issue 27,
-- POLICY10). Written, with its gold, before the extractor first ran on it; its first score is an unseen figure,
-- later ones are development figures. Not frozen.
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, role VARCHAR);
CREATE TABLE Owner (
    owner_id INTEGER PRIMARY KEY,
    full_name VARCHAR,
    email VARCHAR,
    phone VARCHAR,
    home_address VARCHAR,
    card_last4 VARCHAR,            -- the payment card on file
    marketing_opt_in BOOLEAN
);
CREATE TABLE Pet (pet_id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES Owner(owner_id), name VARCHAR,
    species VARCHAR, breed VARCHAR, microchip_number VARCHAR, date_of_birth DATE);
CREATE TABLE Appointment (appointment_id INTEGER PRIMARY KEY, pet_id INTEGER REFERENCES Pet(pet_id),
    vet_id INTEGER REFERENCES Staff(staff_id), start_time TIMESTAMP, reason VARCHAR);
CREATE TABLE ClinicalNote (note_id INTEGER PRIMARY KEY, appointment_id INTEGER REFERENCES Appointment(appointment_id),
    note_text VARCHAR);
CREATE TABLE Vaccination (vaccination_id INTEGER PRIMARY KEY, pet_id INTEGER REFERENCES Pet(pet_id), vaccine VARCHAR,
    given_on DATE);
CREATE TABLE Invoice (invoice_id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES Owner(owner_id),
    amount DECIMAL(8, 2), paid BOOLEAN);
CREATE TABLE Insurer (insurer_id INTEGER PRIMARY KEY, name VARCHAR, agreement_active BOOLEAN);
CREATE TABLE InsuranceClaim (claim_id INTEGER PRIMARY KEY, pet_id INTEGER REFERENCES Pet(pet_id),
    insurer_id INTEGER REFERENCES Insurer(insurer_id), amount DECIMAL(8, 2), status VARCHAR);
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR, service VARCHAR);
INSERT INTO Staff VALUES (1, 'V1', 'vet'), (2, 'V2', 'vet'), (3, 'N1', 'nurse'), (4, 'R1', 'receptionist'),
    (5, 'G1', 'groomer'), (6, 'M1', 'marketing');
INSERT INTO Owner VALUES (1, 'Owner One', 'o1@x', '07700-1', '1 Mill Lane', '4242', true),
    (2, 'Owner Two', 'o2@x', '07700-2', '2 Mill Lane', '1881', false),
    (3, 'Owner Three', 'o3@x', '07700-3', '3 Mill Lane', '0005', true);
INSERT INTO Pet VALUES (1, 1, 'Rex', 'dog', 'collie', '900001', DATE '2019-04-01'),
    (2, 2, 'Tibbles', 'cat', 'tabby', '900002', DATE '2016-02-03'), (3, 3, 'Hop', 'rabbit', 'lop', '900003', DATE '2022-06-07');
INSERT INTO Appointment VALUES (1, 1, 1, TIMESTAMP '2024-05-01 09:00', 'limping'),
    (2, 2, 2, TIMESTAMP '2024-05-02 10:30', 'annual check'), (3, 3, 1, TIMESTAMP '2024-05-03 11:00', 'teeth');
INSERT INTO ClinicalNote VALUES (1, 1, 'Left foreleg sprain, rest for two weeks and recheck'),
    (2, 2, 'Weight down, bloods sent to the laboratory for thyroid panel');
INSERT INTO Vaccination VALUES (1, 1, 'DHP', DATE '2024-01-10'), (2, 2, 'FeLV', DATE '2023-11-02');
INSERT INTO Invoice VALUES (1, 1, 120.50, true), (2, 2, 89.00, false);
INSERT INTO Insurer VALUES (1, 'PetCover', true), (2, 'OldInsure', false);
INSERT INTO InsuranceClaim VALUES (1, 1, 1, 120.50, 'open'), (2, 2, 2, 89.00, 'paid');
INSERT INTO Partner VALUES (1, 'Happy Paws Kennels', 'kennel'), (2, 'VetLab', 'laboratory'), (3, 'Rest Easy', 'crematorium');
