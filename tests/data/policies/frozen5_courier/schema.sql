-- A courier company's customer and delivery data: FROZEN text of round 5 (issue 27, FROZEN5). Written, with its
-- gold, after the offline extractor of commit 7eccc2b and pinned before the extractor first ran on it.
CREATE TABLE Customer (customer_id INTEGER PRIMARY KEY, full_name VARCHAR, email VARCHAR, phone VARCHAR,
    home_address VARCHAR, account_status VARCHAR);
CREATE TABLE Employee (employee_id INTEGER PRIMARY KEY, name VARCHAR, team VARCHAR, depot VARCHAR);
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR, contract_active BOOLEAN);
CREATE TABLE Parcel (parcel_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES Customer(customer_id),
    retailer_id INTEGER REFERENCES Partner(partner_id), subcontractor_id INTEGER REFERENCES Partner(partner_id),
    delivery_address VARCHAR, notes VARCHAR, time_slot VARCHAR, weight_kg DOUBLE, status VARCHAR,
    contents_description VARCHAR, declared_value DECIMAL(10, 2));
CREATE TABLE RouteStop (stop_id INTEGER PRIMARY KEY, parcel_id INTEGER REFERENCES Parcel(parcel_id),
    driver_id INTEGER REFERENCES Employee(employee_id), route_date DATE, stop_no INTEGER);
CREATE TABLE ProofOfDelivery (pod_id INTEGER PRIMARY KEY, parcel_id INTEGER REFERENCES Parcel(parcel_id),
    delivered_at TIMESTAMP, signature_png VARCHAR, photo_url VARCHAR, gps_position VARCHAR);
CREATE TABLE Payment (payment_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES Customer(customer_id),
    card_last4 VARCHAR, amount DECIMAL(10, 2), paid_on DATE);
CREATE TABLE Ticket (ticket_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES Customer(customer_id),
    assigned_to INTEGER REFERENCES Employee(employee_id), opened_on DATE, status VARCHAR);
CREATE TABLE OfferConsent (consent_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES Customer(customer_id),
    opted_in BOOLEAN, changed_on DATE);
COMMENT ON COLUMN Customer.account_status IS 'active, suspended or closed';
COMMENT ON COLUMN Parcel.notes IS 'Delivery instructions from the customer';
COMMENT ON COLUMN Parcel.time_slot IS 'Booked delivery window';
COMMENT ON COLUMN Parcel.declared_value IS 'Customs value declared by the sender, EUR';
COMMENT ON COLUMN ProofOfDelivery.photo_url IS 'Photo of the door or safe place at handover';
COMMENT ON COLUMN ProofOfDelivery.gps_position IS 'Scanner GPS fix at handover';
INSERT INTO Customer VALUES (1, 'C1', 'c1@x', '0722-1', 'a', 'active'), (2, 'C2', 'c2@x', '0722-2', 'b', 'suspended'),
    (3, 'C3', 'c3@x', '0722-3', 'c', 'active');
INSERT INTO Employee VALUES (1, 'E1', 'driver', 'East'), (2, 'E2', 'driver', 'West'), (3, 'E3', 'depot', 'East'),
    (4, 'E4', 'customer_service', 'HQ'), (5, 'E5', 'fraud', 'HQ'), (6, 'E6', 'marketing', 'HQ');
INSERT INTO Partner VALUES (1, 'Last Mile Co', 'subcontractor', true), (2, 'Old Vans', 'subcontractor', false),
    (3, 'Border Brokers', 'customs_broker', true), (4, 'Shoe Shop', 'retailer', true), (5, 'City Police', 'police', true);
INSERT INTO Parcel VALUES
    (1, 1, 4, NULL, 'a', 'leave with neighbour', '09-12', 1.2, 'out_for_delivery', 'shoes', 80.00),
    (2, 2, 4, 1, 'b', 'ring twice', '12-15', 3.5, 'closed', 'books', 40.00),
    (3, 3, NULL, 2, 'c', NULL, '15-18', 0.4, 'in_transit', 'phone case', 15.00);
INSERT INTO RouteStop VALUES (1, 1, 1, DATE '2024-06-03', 4), (2, 2, 2, DATE '2024-06-02', 7);
INSERT INTO ProofOfDelivery VALUES (1, 2, TIMESTAMP '2024-06-02 13:10:00', 'sig/2.png', 'pod/2.jpg', '52.37,4.89');
INSERT INTO Payment VALUES (1, 1, '4242', 12.50, DATE '2024-06-01'), (2, 3, '1111', 7.90, DATE '2024-06-01');
INSERT INTO Ticket VALUES (1, 2, 4, DATE '2024-06-04', 'open'), (2, 1, 4, DATE '2024-05-20', 'resolved');
INSERT INTO OfferConsent VALUES (1, 1, true, DATE '2024-01-01'), (2, 3, false, DATE '2024-02-01');
