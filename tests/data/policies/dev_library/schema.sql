-- A public library's patron records: DEVELOPMENT domain of the offline policy extractor (issue 27,
-- prohibitions). Not frozen: rules may be written from it; its figures are training figures.
CREATE TABLE Branch (branch_id INTEGER PRIMARY KEY, name VARCHAR);
CREATE TABLE Patron (patron_id INTEGER PRIMARY KEY, full_name VARCHAR, home_address VARCHAR, phone VARCHAR,
    email VARCHAR, birth_date DATE, card_number VARCHAR, home_branch INTEGER REFERENCES Branch(branch_id));
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, position VARCHAR, branch_id INTEGER REFERENCES Branch(branch_id));
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, kind VARCHAR, agreement_active BOOLEAN);
CREATE TABLE Item (item_id INTEGER PRIMARY KEY, title VARCHAR, author VARCHAR, subject VARCHAR);
CREATE TABLE Loan (loan_id INTEGER PRIMARY KEY, patron_id INTEGER REFERENCES Patron(patron_id),
    item_id INTEGER REFERENCES Item(item_id), checkout_date DATE, due_date DATE, returned BOOLEAN);
CREATE TABLE Hold (hold_id INTEGER PRIMARY KEY, patron_id INTEGER REFERENCES Patron(patron_id),
    item_id INTEGER REFERENCES Item(item_id), placed_on DATE);
CREATE TABLE Fine (fine_id INTEGER PRIMARY KEY, patron_id INTEGER REFERENCES Patron(patron_id), amount DECIMAL(8, 2),
    reason VARCHAR, paid BOOLEAN);
CREATE TABLE ComputerSession (session_id INTEGER PRIMARY KEY, patron_id INTEGER REFERENCES Patron(patron_id),
    terminal VARCHAR, started_at TIMESTAMP, sites_visited VARCHAR);
CREATE TABLE Payment (payment_id INTEGER PRIMARY KEY, patron_id INTEGER REFERENCES Patron(patron_id),
    amount DECIMAL(8, 2), card_last4 VARCHAR, paid_on DATE);
INSERT INTO Branch VALUES (1, 'central'), (2, 'east');
INSERT INTO Patron VALUES (1, 'P1', 'a', '1', 'p1@x', DATE '1980-01-01', 'C1', 1),
    (2, 'P2', 'b', '2', 'p2@x', DATE '2012-05-01', 'C2', 2), (3, 'P3', 'c', '3', 'p3@x', DATE '1990-01-01', 'C3', 1);
INSERT INTO Staff VALUES (1, 'circulation_clerk', 1), (2, 'librarian', 1), (3, 'volunteer', 2), (4, 'branch_manager', 2);
INSERT INTO Partner VALUES (1, 'collection_agency', true), (2, 'law_enforcement', true), (3, 'marketer', false);
INSERT INTO Item VALUES (1, 'T1', 'A1', 'health'), (2, 'T2', 'A2', 'history');
INSERT INTO Loan VALUES (1, 1, 1, DATE '2024-01-02', DATE '2024-01-23', false), (2, 2, 2, DATE '2024-02-01', DATE '2024-02-22', true);
INSERT INTO Hold VALUES (1, 3, 1, DATE '2024-03-01');
INSERT INTO Fine VALUES (1, 1, 2.50, 'late', false), (2, 2, 10.00, 'lost', true);
INSERT INTO ComputerSession VALUES (1, 1, 'T-01', TIMESTAMP '2024-01-05 10:00:00', 'news');
INSERT INTO Payment VALUES (1, 2, 10.00, '4242', DATE '2024-02-25');
