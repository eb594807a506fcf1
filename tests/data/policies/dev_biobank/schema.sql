-- A biobank's donors, samples and data: DEVELOPMENT domain of the offline policy extractor (issue 27,
-- data grounding and conditions). Not frozen: rules may be written from it; its figures are training figures.
CREATE TABLE Donor (donor_id INTEGER PRIMARY KEY, full_name VARCHAR, date_of_birth DATE, sex VARCHAR,
    postcode VARCHAR, phone VARCHAR, enrolled_on DATE);
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, job VARCHAR);
CREATE TABLE Researcher (researcher_id INTEGER PRIMARY KEY, name VARCHAR, affiliation VARCHAR, rank VARCHAR);
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, agreement_active BOOLEAN);
CREATE TABLE Project (project_id INTEGER PRIMARY KEY, title VARCHAR,
    lead_id INTEGER REFERENCES Researcher(researcher_id), approved BOOLEAN);
CREATE TABLE ProjectMember (project_id INTEGER REFERENCES Project(project_id),
    researcher_id INTEGER REFERENCES Researcher(researcher_id));
CREATE TABLE Consent (consent_id INTEGER PRIMARY KEY, donor_id INTEGER REFERENCES Donor(donor_id), purpose VARCHAR,
    granted BOOLEAN, signed_on DATE);
CREATE TABLE Sample (sample_id INTEGER PRIMARY KEY, donor_id INTEGER REFERENCES Donor(donor_id), tissue VARCHAR,
    collected_on DATE, storage_location VARCHAR);
CREATE TABLE Allocation (allocation_id INTEGER PRIMARY KEY, project_id INTEGER REFERENCES Project(project_id),
    sample_id INTEGER REFERENCES Sample(sample_id));
CREATE TABLE GenotypeResult (result_id INTEGER PRIMARY KEY, donor_id INTEGER REFERENCES Donor(donor_id),
    variant VARCHAR, zygosity VARCHAR);
CREATE TABLE Diagnosis (diagnosis_id INTEGER PRIMARY KEY, donor_id INTEGER REFERENCES Donor(donor_id),
    icd_code VARCHAR, diagnosed_on DATE);
CREATE TABLE Questionnaire (response_id INTEGER PRIMARY KEY, donor_id INTEGER REFERENCES Donor(donor_id),
    smoking VARCHAR, alcohol VARCHAR, income_band VARCHAR);
INSERT INTO Donor VALUES (1, 'D1', DATE '1960-02-01', 'F', 'AB1', '555-1', DATE '2020-01-01'),
    (2, 'D2', DATE '1975-07-09', 'M', 'AB2', '555-2', DATE '2021-03-04'), (3, 'D3', DATE '1988-11-30', 'F', 'CD3', '555-3', DATE '2022-05-06');
INSERT INTO Staff VALUES (1, 'S1', 'lab_technician'), (2, 'S2', 'data_manager'), (3, 'S3', 'curator'),
    (4, 'S4', 'research_nurse'), (5, 'S5', 'auditor');
INSERT INTO Researcher VALUES (1, 'R1', 'internal', 'principal_investigator'), (2, 'R2', 'external', 'postdoc'),
    (3, 'R3', 'internal', 'student');
INSERT INTO Partner VALUES (1, 'Seq Co', 'sequencing_lab', true), (2, 'Ins Co', 'insurer', false),
    (3, 'Fast Co', 'courier', true), (4, 'Big Co', 'employer', false);
INSERT INTO Project VALUES (1, 'P1', 1, true), (2, 'P2', 2, false);
INSERT INTO ProjectMember VALUES (1, 1), (1, 3), (2, 2);
INSERT INTO Consent VALUES (1, 1, 'research', true, DATE '2020-01-01'), (2, 2, 'research', false, DATE '2021-03-04'),
    (3, 3, 'commercial', true, DATE '2022-05-06');
INSERT INTO Sample VALUES (1, 1, 'blood', DATE '2020-01-02', 'F1-R2'), (2, 2, 'saliva', DATE '2021-03-05', 'F2-R1'),
    (3, 3, 'blood', DATE '2022-05-07', 'F1-R3');
INSERT INTO Allocation VALUES (1, 1, 1), (2, 2, 2);
INSERT INTO GenotypeResult VALUES (1, 1, 'rs123', 'het'), (2, 2, 'rs456', 'hom');
INSERT INTO Diagnosis VALUES (1, 1, 'E11', DATE '2019-06-01'), (2, 3, 'I10', DATE '2021-08-01');
INSERT INTO Questionnaire VALUES (1, 1, 'never', 'low', 'B2'), (2, 2, 'former', 'none', 'B4');
