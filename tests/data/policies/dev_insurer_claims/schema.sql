-- An insurer's claims files: DEVELOPMENT domain of the offline policy extractor (issue 27, POLICY9).
-- Written, with its gold, before the extractor first ran on it; its first score is an unseen figure, later
-- ones are development figures. Not frozen.
CREATE TABLE Policyholder (
    policyholder_id INTEGER PRIMARY KEY,
    full_name VARCHAR,
    date_of_birth DATE,
    phone VARCHAR,            -- telephone number
    email VARCHAR,
    address VARCHAR           -- postal address
);
CREATE TABLE InsurancePolicy (policy_id INTEGER PRIMARY KEY,
    policyholder_id INTEGER REFERENCES Policyholder(policyholder_id), product VARCHAR, annual_premium DECIMAL(10, 2),
    status VARCHAR);
CREATE TABLE ThirdParty (
    party_id INTEGER PRIMARY KEY,
    name VARCHAR,
    kind VARCHAR,             -- loss_adjuster, repairer, reinsurer, police
    agreement_active BOOLEAN  -- the service agreement is in force
);
CREATE TABLE Claim (claim_id INTEGER PRIMARY KEY, policy_id INTEGER REFERENCES InsurancePolicy(policy_id),
    policyholder_id INTEGER REFERENCES Policyholder(policyholder_id), loss_date DATE, loss_description VARCHAR,
    amount_claimed DECIMAL(12, 2), repairer_id INTEGER REFERENCES ThirdParty(party_id), status VARCHAR);
CREATE TABLE MedicalReport (report_id INTEGER PRIMARY KEY, claim_id INTEGER REFERENCES Claim(claim_id),
    doctor_name VARCHAR, findings VARCHAR);
CREATE TABLE ClaimPayment (payment_id INTEGER PRIMARY KEY, claim_id INTEGER REFERENCES Claim(claim_id),
    amount DECIMAL(12, 2), paid_on DATE);
CREATE TABLE BankAccount (account_id INTEGER PRIMARY KEY,
    policyholder_id INTEGER REFERENCES Policyholder(policyholder_id), sort_code VARCHAR, account_number VARCHAR);
CREATE TABLE FraudFlag (flag_id INTEGER PRIMARY KEY, claim_id INTEGER REFERENCES Claim(claim_id), reason VARCHAR,
    raised_on DATE);
CREATE TABLE Staff (
    staff_id INTEGER PRIMARY KEY,
    name VARCHAR,
    department VARCHAR        -- claims, payments, medical_review, fraud, underwriting, marketing, customer_service
);
CREATE TABLE ClaimAssignment (claim_id INTEGER REFERENCES Claim(claim_id), staff_id INTEGER REFERENCES Staff(staff_id),
    assigned_on DATE);
CREATE TABLE Consent (consent_id INTEGER PRIMARY KEY,
    policyholder_id INTEGER REFERENCES Policyholder(policyholder_id), scope VARCHAR, granted BOOLEAN);
INSERT INTO Policyholder VALUES (1, 'H1', DATE '1970-01-02', '0161-1', 'h1@x', 'a'), (2, 'H2', DATE '1985-03-04', '0161-2', 'h2@x', 'b'),
    (3, 'H3', DATE '1999-05-06', '0161-3', 'h3@x', 'c');
INSERT INTO InsurancePolicy VALUES (1, 1, 'motor', 420.00, 'in_force'), (2, 2, 'home', 310.00, 'in_force'),
    (3, 3, 'motor', 650.00, 'lapsed');
INSERT INTO ThirdParty VALUES (1, 'Adjust Ltd', 'loss_adjuster', true), (2, 'Fix Garage', 'repairer', true),
    (3, 'Re Co', 'reinsurer', true), (4, 'City Police', 'police', true), (5, 'Old Adjusters', 'loss_adjuster', false);
INSERT INTO Claim VALUES (1, 1, 1, DATE '2024-02-01', 'rear-end collision at a junction on the way to work', 2300.00, 2, 'open'),
    (2, 2, 2, DATE '2024-03-10', 'water leak from the upstairs bathroom damaged the kitchen ceiling', 5100.00, NULL, 'settled'),
    (3, 3, 3, DATE '2024-04-02', 'whiplash injury after a low speed collision', 7800.00, 2, 'open');
INSERT INTO MedicalReport VALUES (1, 3, 'Dr A', 'soft tissue neck injury, six weeks of physiotherapy advised');
INSERT INTO ClaimPayment VALUES (1, 2, 5100.00, DATE '2024-04-01');
INSERT INTO BankAccount VALUES (1, 1, '01-02-03', '12345678'), (2, 2, '04-05-06', '87654321');
INSERT INTO FraudFlag VALUES (1, 3, 'injury reported late', DATE '2024-04-20');
INSERT INTO Staff VALUES (1, 'S1', 'claims'), (2, 'S2', 'payments'), (3, 'S3', 'medical_review'), (4, 'S4', 'fraud'),
    (5, 'S5', 'underwriting'), (6, 'S6', 'marketing'), (7, 'S7', 'customer_service');
INSERT INTO ClaimAssignment VALUES (1, 1, DATE '2024-02-02'), (3, 1, DATE '2024-04-03');
INSERT INTO Consent VALUES (1, 1, 'underwriting_review', true), (2, 2, 'underwriting_review', false),
    (3, 3, 'marketing', true);
