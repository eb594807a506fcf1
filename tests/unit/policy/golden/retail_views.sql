-- R1 sender_view
SELECT CAST(t."employee_id" AS VARCHAR) AS agent FROM "Employee" AS t WHERE TRUE

-- R1 recipient_view
SELECT CAST(t."employee_id" AS VARCHAR) AS agent FROM "Employee" AS t WHERE COALESCE((t.role = 'support'), FALSE)

-- R1 subject_view
SELECT CAST(t."customer_id" AS VARCHAR) AS agent FROM "Customer" AS t WHERE TRUE

-- R1 condition_view:assigned_case
SELECT DISTINCT CAST(q."recipient" AS VARCHAR) AS recipient, CAST(q."subject" AS VARCHAR) AS subject FROM (SELECT agent_id AS recipient, customer_id AS subject FROM SupportCase) AS q

-- R1 data_view
SELECT 'Customer' AS relation, CAST(t."customer_id" AS VARCHAR) AS row_key, 'customer_id' AS attribute, CAST(t."customer_id" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Customer" AS t WHERE TRUE
UNION ALL
SELECT 'Customer' AS relation, CAST(t."customer_id" AS VARCHAR) AS row_key, 'name' AS attribute, CAST(t."name" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Customer" AS t WHERE TRUE
UNION ALL
SELECT 'Customer' AS relation, CAST(t."customer_id" AS VARCHAR) AS row_key, 'email' AS attribute, CAST(t."email" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Customer" AS t WHERE TRUE
UNION ALL
SELECT 'Orders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'order_id' AS attribute, CAST(t."order_id" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Orders" AS t WHERE TRUE
UNION ALL
SELECT 'Orders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'customer_id' AS attribute, CAST(t."customer_id" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Orders" AS t WHERE TRUE
UNION ALL
SELECT 'Orders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'order_date' AS attribute, CAST(t."order_date" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Orders" AS t WHERE TRUE
UNION ALL
SELECT 'Orders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'channel' AS attribute, CAST(t."channel" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Orders" AS t WHERE TRUE
UNION ALL
SELECT 'OrderItem' AS relation, REPLACE(REPLACE(CAST(t."order_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."line_no" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'order_id' AS attribute, CAST(t."order_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "OrderItem" AS t WHERE TRUE
UNION ALL
SELECT 'OrderItem' AS relation, REPLACE(REPLACE(CAST(t."order_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."line_no" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'line_no' AS attribute, CAST(t."line_no" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "OrderItem" AS t WHERE TRUE
UNION ALL
SELECT 'OrderItem' AS relation, REPLACE(REPLACE(CAST(t."order_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."line_no" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'product_id' AS attribute, CAST(t."product_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "OrderItem" AS t WHERE TRUE
UNION ALL
SELECT 'OrderItem' AS relation, REPLACE(REPLACE(CAST(t."order_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."line_no" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'qty' AS attribute, CAST(t."qty" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "OrderItem" AS t WHERE TRUE
UNION ALL
SELECT 'OrderItem' AS relation, REPLACE(REPLACE(CAST(t."order_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."line_no" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'price' AS attribute, CAST(t."price" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "OrderItem" AS t WHERE TRUE
UNION ALL
SELECT 'Payment' AS relation, CAST(t."payment_id" AS VARCHAR) AS row_key, 'payment_id' AS attribute, CAST(t."payment_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "Payment" AS t WHERE TRUE
UNION ALL
SELECT 'Payment' AS relation, CAST(t."payment_id" AS VARCHAR) AS row_key, 'order_id' AS attribute, CAST(t."order_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "Payment" AS t WHERE TRUE
UNION ALL
SELECT 'Payment' AS relation, CAST(t."payment_id" AS VARCHAR) AS row_key, 'method' AS attribute, CAST(t."method" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "Payment" AS t WHERE TRUE
UNION ALL
SELECT 'Payment' AS relation, CAST(t."payment_id" AS VARCHAR) AS row_key, 'amount' AS attribute, CAST(t."amount" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "Payment" AS t WHERE TRUE

-- R3 sender_view
SELECT CAST(t."employee_id" AS VARCHAR) AS agent FROM "Employee" AS t WHERE TRUE

-- R3 recipient_view
SELECT CAST(t."employee_id" AS VARCHAR) AS agent FROM "Employee" AS t WHERE COALESCE((t.role = 'marketing'), FALSE)

-- R3 subject_view
SELECT CAST(t."customer_id" AS VARCHAR) AS agent FROM "Customer" AS t WHERE TRUE

-- R3 condition_view:consented
SELECT DISTINCT CAST(q."subject" AS VARCHAR) AS subject, CAST(q."purpose" AS VARCHAR) AS purpose FROM (SELECT customer_id AS subject, purpose FROM Consent WHERE granted) AS q

-- R3 data_view
SELECT 'Orders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'order_id' AS attribute, CAST(t."order_id" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Orders" AS t WHERE TRUE
UNION ALL
SELECT 'Orders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'customer_id' AS attribute, CAST(t."customer_id" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Orders" AS t WHERE TRUE
UNION ALL
SELECT 'Orders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'order_date' AS attribute, CAST(t."order_date" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Orders" AS t WHERE TRUE
UNION ALL
SELECT 'Orders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'channel' AS attribute, CAST(t."channel" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Orders" AS t WHERE TRUE
UNION ALL
SELECT 'OrderItem' AS relation, REPLACE(REPLACE(CAST(t."order_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."line_no" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'order_id' AS attribute, CAST(t."order_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "OrderItem" AS t WHERE TRUE
UNION ALL
SELECT 'OrderItem' AS relation, REPLACE(REPLACE(CAST(t."order_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."line_no" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'line_no' AS attribute, CAST(t."line_no" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "OrderItem" AS t WHERE TRUE
UNION ALL
SELECT 'OrderItem' AS relation, REPLACE(REPLACE(CAST(t."order_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."line_no" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'product_id' AS attribute, CAST(t."product_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "OrderItem" AS t WHERE TRUE
UNION ALL
SELECT 'OrderItem' AS relation, REPLACE(REPLACE(CAST(t."order_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."line_no" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'qty' AS attribute, CAST(t."qty" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "OrderItem" AS t WHERE TRUE
UNION ALL
SELECT 'OrderItem' AS relation, REPLACE(REPLACE(CAST(t."order_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."line_no" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'price' AS attribute, CAST(t."price" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "OrderItem" AS t WHERE TRUE
UNION ALL
SELECT 'Customer' AS relation, CAST(t."customer_id" AS VARCHAR) AS row_key, 'zip3' AS attribute, CAST(t."zip3" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Customer" AS t WHERE TRUE
UNION ALL
SELECT 'Customer' AS relation, CAST(t."customer_id" AS VARCHAR) AS row_key, 'birth_year' AS attribute, CAST(t."birth_year" AS VARCHAR) AS value, CAST(t."customer_id" AS VARCHAR) AS subject FROM "Customer" AS t WHERE TRUE

-- R6 sender_view
-- any

-- R6 recipient_view
-- any

-- R6 subject_view
-- any

-- R6 data_view
SELECT 'Product' AS relation, CAST(t."product_id" AS VARCHAR) AS row_key, 'category' AS attribute, CAST(t."category" AS VARCHAR) AS value, CAST(NULL AS VARCHAR) AS subject FROM "Product" AS t WHERE COALESCE((t.category = 'pharmacy'), FALSE)
UNION ALL
SELECT 'Product' AS relation, CAST(t."product_id" AS VARCHAR) AS row_key, 'product_id' AS attribute, CAST(t."product_id" AS VARCHAR) AS value, CAST(NULL AS VARCHAR) AS subject FROM "Product" AS t WHERE COALESCE((t.category = 'pharmacy'), FALSE)
UNION ALL
SELECT 'OrderItem' AS relation, REPLACE(REPLACE(CAST(t."order_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."line_no" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'product_id' AS attribute, CAST(t."product_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."customer_id" AS VARCHAR)) END FROM "Orders" AS "__p_s1" WHERE "__p_s1"."order_id" = t."order_id") AS subject FROM "OrderItem" AS t WHERE COALESCE(t."product_id" IN (SELECT "__p_u1"."product_id" FROM "Product" AS "__p_u1" WHERE COALESCE((__p_u1.category = 'pharmacy'), FALSE)), FALSE)

