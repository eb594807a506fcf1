-- A mobile network operator's subscriber data: DEVELOPMENT domain of the offline policy extractor (issue 27,
-- POLICY7). Written, with its gold, before the extractor first ran on it; its first score is an unseen figure,
-- later ones are development figures. Not frozen.
CREATE TABLE Subscriber (subscriber_id INTEGER PRIMARY KEY, full_name VARCHAR, date_of_birth DATE,
    home_address VARCHAR, email VARCHAR, id_document_number VARCHAR);
CREATE TABLE Line (line_id INTEGER PRIMARY KEY, subscriber_id INTEGER REFERENCES Subscriber(subscriber_id),
    phone_number VARCHAR, plan_name VARCHAR, activated_on DATE);
CREATE TABLE CallRecord (call_id INTEGER PRIMARY KEY, line_id INTEGER REFERENCES Line(line_id),
    called_number VARCHAR, started_at TIMESTAMP, duration_s INTEGER, cell_id VARCHAR);
CREATE TABLE LocationRecord (location_id INTEGER PRIMARY KEY, line_id INTEGER REFERENCES Line(line_id),
    cell_id VARCHAR, recorded_at TIMESTAMP, latitude DOUBLE, longitude DOUBLE);
CREATE TABLE Invoice (invoice_id INTEGER PRIMARY KEY, subscriber_id INTEGER REFERENCES Subscriber(subscriber_id),
    billing_period VARCHAR, amount DECIMAL(10, 2), paid BOOLEAN);
CREATE TABLE PaymentCard (card_id INTEGER PRIMARY KEY, subscriber_id INTEGER REFERENCES Subscriber(subscriber_id),
    card_last4 VARCHAR, expiry VARCHAR);
CREATE TABLE Employee (employee_id INTEGER PRIMARY KEY, name VARCHAR, team VARCHAR);
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, contract_active BOOLEAN);
CREATE TABLE SupportTicket (ticket_id INTEGER PRIMARY KEY, subscriber_id INTEGER REFERENCES Subscriber(subscriber_id),
    assigned_to INTEGER REFERENCES Employee(employee_id), opened_on DATE, status VARCHAR);
CREATE TABLE MarketingConsent (consent_id INTEGER PRIMARY KEY,
    subscriber_id INTEGER REFERENCES Subscriber(subscriber_id), channel VARCHAR, granted BOOLEAN);
INSERT INTO Subscriber VALUES (1, 'S1', DATE '1975-02-03', 'a', 's1@x', 'ID-1'), (2, 'S2', DATE '1990-07-08', 'b', 's2@x', 'ID-2'),
    (3, 'S3', DATE '2003-11-12', 'c', 's3@x', 'ID-3');
INSERT INTO Line VALUES (1, 1, '0700-1', 'basic', DATE '2020-01-01'), (2, 1, '0700-2', 'data', DATE '2021-01-01'),
    (3, 2, '0700-3', 'basic', DATE '2022-06-01'), (4, 3, '0700-4', 'unlimited', DATE '2023-03-01');
INSERT INTO CallRecord VALUES (1, 1, '0800-9', TIMESTAMP '2024-03-02 09:00:00', 120, 'C1'),
    (2, 3, '0800-8', TIMESTAMP '2024-03-03 18:30:00', 45, 'C2');
INSERT INTO LocationRecord VALUES (1, 1, 'C1', TIMESTAMP '2024-03-02 09:00:00', 51.5, -0.1),
    (2, 4, 'C3', TIMESTAMP '2024-03-04 12:00:00', 51.6, -0.2);
INSERT INTO Invoice VALUES (1, 1, '2024-02', 30.00, true), (2, 2, '2024-02', 12.50, false), (3, 3, '2024-02', 55.00, true);
INSERT INTO PaymentCard VALUES (1, 1, '4242', '12/27'), (2, 3, '1111', '01/26');
INSERT INTO Employee VALUES (1, 'E1', 'customer_care'), (2, 'E2', 'network_engineering'), (3, 'E3', 'billing'),
    (4, 'E4', 'fraud'), (5, 'E5', 'marketing'), (6, 'E6', 'retail');
INSERT INTO Partner VALUES (1, 'Roam Co', 'roaming_partner', true), (2, 'Ads Co', 'advertiser', true),
    (3, 'Police', 'law_enforcement', true), (4, 'Collect Co', 'debt_collector', false);
INSERT INTO SupportTicket VALUES (1, 1, 1, DATE '2024-03-05', 'open'), (2, 2, 1, DATE '2024-03-06', 'closed');
INSERT INTO MarketingConsent VALUES (1, 1, 'email', true), (2, 2, 'sms', true), (3, 3, 'email', false);
