-- A clinical-trial site and its data-sharing partners (frozen evaluation domain of the offline
-- policy extractor, issue 27; written before any extractor change, never tuned on).
CREATE TABLE Participant (participant_id INTEGER PRIMARY KEY, name VARCHAR, birth_date DATE, sex VARCHAR,
    postal_code VARCHAR, email VARCHAR, phone VARCHAR);
CREATE TABLE Investigator (investigator_id INTEGER PRIMARY KEY, name VARCHAR, role VARCHAR);
CREATE TABLE Study (study_id INTEGER PRIMARY KEY, title VARCHAR, phase VARCHAR, status VARCHAR,
    lead_investigator_id INTEGER REFERENCES Investigator(investigator_id));
CREATE TABLE Enrollment (participant_id INTEGER REFERENCES Participant(participant_id),
    study_id INTEGER REFERENCES Study(study_id), arm VARCHAR, enrolled DATE, PRIMARY KEY (participant_id, study_id));
CREATE TABLE LabResult (result_id INTEGER PRIMARY KEY, participant_id INTEGER REFERENCES Participant(participant_id),
    study_id INTEGER REFERENCES Study(study_id), test VARCHAR, value DOUBLE, collected DATE);
CREATE TABLE AdverseEvent (event_id INTEGER PRIMARY KEY, participant_id INTEGER REFERENCES Participant(participant_id),
    study_id INTEGER REFERENCES Study(study_id), description VARCHAR, severity VARCHAR, reported DATE);
CREATE TABLE Genome (participant_id INTEGER PRIMARY KEY REFERENCES Participant(participant_id), sequence_uri VARCHAR,
    apoe_genotype VARCHAR);
CREATE TABLE ConsentForm (participant_id INTEGER REFERENCES Participant(participant_id), scope VARCHAR,
    signed BOOLEAN, PRIMARY KEY (participant_id, scope));
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, contract_active BOOLEAN);
INSERT INTO Participant VALUES
    (1, 'Ivy Stone', DATE '1961-05-04', 'F', '02139', 'ivy@example.org', '555-0301'),
    (2, 'Jon Reyes', DATE '1955-12-11', 'M', '02140', 'jon@example.org', '555-0302'),
    (3, 'Kai Moreau', DATE '1970-08-23', 'M', '02141', 'kai@example.org', '555-0303'),
    (4, 'Lea Novak', DATE '1966-02-17', 'F', '02139', 'lea@example.org', '555-0304');
INSERT INTO Investigator VALUES (1, 'Dr. Hale', 'principal_investigator'), (2, 'Dr. Ames', 'principal_investigator'),
    (3, 'Dr. Wu', 'sub_investigator'), (4, 'M. Ortiz', 'coordinator'), (5, 'P. Lang', 'monitor'),
    (6, 'Q. Shah', 'statistician');
INSERT INTO Study VALUES (100, 'Statin dose in early dementia', 'II', 'active', 1),
    (101, 'Exercise and memory', 'III', 'closed', 2);
INSERT INTO Enrollment VALUES (1, 100, 'high_dose', DATE '2024-01-10'), (2, 100, 'placebo', DATE '2024-01-12'),
    (3, 101, 'exercise', DATE '2023-03-01'), (4, 100, 'low_dose', DATE '2024-02-02');
INSERT INTO LabResult VALUES (1000, 1, 100, 'ldl', 3.1, DATE '2024-02-10'), (1001, 2, 100, 'ldl', 4.2, DATE '2024-02-11'),
    (1002, 3, 101, 'mmse', 27, DATE '2023-06-01'), (1003, 4, 100, 'alt', 41, DATE '2024-03-02');
INSERT INTO AdverseEvent VALUES (2000, 1, 100, 'myalgia', 'mild', DATE '2024-03-01'),
    (2001, 4, 100, 'elevated liver enzymes', 'moderate', DATE '2024-03-05');
INSERT INTO Genome VALUES (1, 's3://site/g/1', 'e3/e4'), (2, 's3://site/g/2', 'e3/e3'), (4, 's3://site/g/4', 'e4/e4');
INSERT INTO ConsentForm VALUES (1, 'genetic_research', true), (2, 'genetic_research', false), (4, 'genetic_research', true),
    (1, 'recontact', true), (3, 'recontact', false);
INSERT INTO Partner VALUES (1, 'Acme Pharma', 'sponsor', true), (2, 'Northern Biobank', 'biobank', true),
    (3, 'Medicines Agency', 'regulator', true), (4, 'SafeLife Insurance', 'insurer', false),
    (5, 'Old Sponsor Inc', 'sponsor', false);
