-- A legal aid clinic's case files: FROZEN text of round 6 (issue 27, FROZEN6). Written, with its gold, after the
-- offline extractor's rules of commit ef3f76f and pinned (SHA-256, benchmarks/cql_frozen.py) before the extractor
-- ran on it.
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, position VARCHAR);
CREATE TABLE ExternalBody (body_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, agreement_active BOOLEAN);
CREATE TABLE Client (client_id INTEGER PRIMARY KEY, full_name VARCHAR, date_of_birth DATE, postal_address VARCHAR,
    tel VARCHAR, ni_number VARCHAR, imm_status VARCHAR, language VARCHAR);
CREATE TABLE Matter (matter_id INTEGER PRIMARY KEY, client_id INTEGER REFERENCES Client(client_id),
    reference VARCHAR, area VARCHAR, status VARCHAR, opened_on DATE, closed_on DATE,
    supervisor_id INTEGER REFERENCES Staff(staff_id));
CREATE TABLE MatterTeam (matter_id INTEGER REFERENCES Matter(matter_id), staff_id INTEGER REFERENCES Staff(staff_id),
    PRIMARY KEY (matter_id, staff_id));
CREATE TABLE CaseNote (note_id INTEGER PRIMARY KEY, matter_id INTEGER REFERENCES Matter(matter_id),
    author_id INTEGER REFERENCES Staff(staff_id), written_on DATE, body VARCHAR);
CREATE TABLE EvidenceDocument (document_id INTEGER PRIMARY KEY, matter_id INTEGER REFERENCES Matter(matter_id),
    title VARCHAR, file_ref VARCHAR, received_on DATE);
CREATE TABLE MeansAssessment (assessment_id INTEGER PRIMARY KEY, client_id INTEGER REFERENCES Client(client_id),
    assessed_on DATE, net_monthly_income DECIMAL(10, 2), capital DECIMAL(12, 2), benefits VARCHAR);
CREATE TABLE Consent (consent_id INTEGER PRIMARY KEY, client_id INTEGER REFERENCES Client(client_id),
    body_id INTEGER REFERENCES ExternalBody(body_id), given_on DATE, withdrawn BOOLEAN);
CREATE TABLE InterpreterBooking (booking_id INTEGER PRIMARY KEY, matter_id INTEGER REFERENCES Matter(matter_id),
    body_id INTEGER REFERENCES ExternalBody(body_id), booked_for DATE);
COMMENT ON COLUMN Staff.position IS 'caseworker / solicitor / volunteer / student_adviser / administrator';
COMMENT ON COLUMN ExternalBody.kind IS 'funder, interpreter, referral_agency, court';
COMMENT ON COLUMN Client.tel IS 'Contact telephone number';
COMMENT ON COLUMN Client.ni_number IS 'National Insurance number (UK)';
COMMENT ON COLUMN Client.imm_status IS 'Immigration status as last verified by the caseworker';
COMMENT ON COLUMN Client.language IS 'Preferred language for advice; used to book interpreters';
COMMENT ON COLUMN Matter.status IS 'open | closed';
COMMENT ON COLUMN Matter.supervisor_id IS 'Supervising solicitor of the matter (Staff.staff_id)';
COMMENT ON COLUMN MeansAssessment.capital IS 'Savings and other capital, GBP';
COMMENT ON COLUMN MeansAssessment.benefits IS 'Welfare benefits in payment at the assessment date';
INSERT INTO Staff VALUES (1, 'W1', 'caseworker'), (2, 'W2', 'solicitor'), (3, 'W3', 'volunteer'),
    (4, 'W4', 'student_adviser'), (5, 'W5', 'administrator'), (6, 'W6', 'solicitor');
INSERT INTO ExternalBody VALUES (1, 'Legal Aid Fund', 'funder', true), (2, 'Lingua Ltd', 'interpreter', true),
    (3, 'Shelter Link', 'referral_agency', true), (4, 'County Court', 'court', true),
    (5, 'Old Words', 'interpreter', false);
INSERT INTO Client VALUES
    (1, 'C1', DATE '1984-02-11', 'a', '0117-1', 'QQ111111A', 'settled', 'English'),
    (2, 'C2', DATE '1999-07-23', 'b', '0117-2', 'QQ222222B', 'pre-settled', 'Polish'),
    (3, 'C3', DATE '1966-12-05', 'c', '0117-3', 'QQ333333C', 'refugee', 'Arabic');
INSERT INTO Matter VALUES (1, 1, 'M-001', 'housing', 'open', DATE '2024-01-10', NULL, 2),
    (2, 2, 'M-002', 'immigration', 'open', DATE '2024-02-01', NULL, 6),
    (3, 3, 'M-003', 'employment', 'closed', DATE '2023-05-01', DATE '2023-11-30', 2);
INSERT INTO MatterTeam VALUES (1, 1), (1, 3), (2, 4), (2, 1), (3, 1);
INSERT INTO CaseNote VALUES (1, 1, 1, DATE '2024-01-11', 'n1'), (2, 2, 4, DATE '2024-02-02', 'n2'),
    (3, 3, 1, DATE '2023-06-01', 'n3');
INSERT INTO EvidenceDocument VALUES (1, 1, 'Tenancy agreement', 'F-1', DATE '2024-01-12'),
    (2, 2, 'Home Office letter', 'F-2', DATE '2024-02-03');
INSERT INTO MeansAssessment VALUES (1, 1, DATE '2024-01-10', 950.00, 200.00, 'universal credit'),
    (2, 2, DATE '2024-02-01', 1400.00, 0.00, 'none');
INSERT INTO Consent VALUES (1, 1, 1, DATE '2024-01-10', false), (2, 2, 3, DATE '2024-02-01', false),
    (3, 3, 3, DATE '2023-05-01', true);
INSERT INTO InterpreterBooking VALUES (1, 2, 2, DATE '2024-02-05'), (2, 3, 5, DATE '2023-06-01');
