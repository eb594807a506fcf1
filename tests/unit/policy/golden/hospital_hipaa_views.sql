-- N1 sender_view
SELECT CAST(t."employee_id" AS VARCHAR) AS agent FROM "Employee" AS t WHERE COALESCE((t.role = 'physician'), FALSE)

-- N1 recipient_view
SELECT CAST(t."employee_id" AS VARCHAR) AS agent FROM "Employee" AS t WHERE COALESCE((t.role = 'resident'), FALSE)

-- N1 subject_view
SELECT CAST(t."pat_id" AS VARCHAR) AS agent FROM "Patient" AS t WHERE TRUE

-- N1 condition_view:attending_treats_patient
SELECT DISTINCT CAST(q."sender" AS VARCHAR) AS sender, CAST(q."subject" AS VARCHAR) AS subject FROM (SELECT employee_id AS sender, pat_id AS subject FROM TreatingRelationship WHERE role = 'attending') AS q

-- N1 condition_view:on_care_team
SELECT DISTINCT CAST(q."recipient" AS VARCHAR) AS recipient, CAST(q."subject" AS VARCHAR) AS subject FROM (SELECT m.employee_id AS recipient, a.pat_id AS subject FROM CareTeamMember AS m JOIN TeamAssignment AS a ON a.team_id = m.team_id) AS q

-- N1 condition_view:supervises
SELECT DISTINCT CAST(q."sender" AS VARCHAR) AS sender, CAST(q."recipient" AS VARCHAR) AS recipient FROM (WITH RECURSIVE sup(sender, recipient) AS (SELECT supervisor_id, supervisee_id FROM Supervises UNION SELECT sup.sender, s.supervisee_id FROM sup JOIN Supervises AS s ON s.supervisor_id = sup.recipient) SELECT sender, recipient FROM sup) AS q

-- N1 data_view
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'diagnosis' AS attribute, CAST(t."diagnosis" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE TRUE
UNION ALL
SELECT 'Discharge' AS relation, CAST(t."discharge_id" AS VARCHAR) AS row_key, 'finaldiagnosis' AS attribute, CAST(t."finaldiagnosis" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Discharge" AS t WHERE TRUE
UNION ALL
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'visit_id' AS attribute, CAST(t."visit_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE TRUE
UNION ALL
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'pat_id' AS attribute, CAST(t."pat_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE TRUE
UNION ALL
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'attending_id' AS attribute, CAST(t."attending_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE TRUE
UNION ALL
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'visit_date' AS attribute, CAST(t."visit_date" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE TRUE
UNION ALL
SELECT 'Discharge' AS relation, CAST(t."discharge_id" AS VARCHAR) AS row_key, 'discharge_id' AS attribute, CAST(t."discharge_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Discharge" AS t WHERE TRUE
UNION ALL
SELECT 'Discharge' AS relation, CAST(t."discharge_id" AS VARCHAR) AS row_key, 'visit_id' AS attribute, CAST(t."visit_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Discharge" AS t WHERE TRUE
UNION ALL
SELECT 'Discharge' AS relation, CAST(t."discharge_id" AS VARCHAR) AS row_key, 'pat_id' AS attribute, CAST(t."pat_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Discharge" AS t WHERE TRUE
UNION ALL
SELECT 'Discharge' AS relation, CAST(t."discharge_id" AS VARCHAR) AS row_key, 'discharge_date' AS attribute, CAST(t."discharge_date" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Discharge" AS t WHERE TRUE
UNION ALL
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'note' AS attribute, CAST(t."note" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE TRUE
UNION ALL
SELECT 'MedicationOrders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'order_id' AS attribute, CAST(t."order_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "MedicationOrders" AS t WHERE TRUE
UNION ALL
SELECT 'MedicationOrders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'visit_id' AS attribute, CAST(t."visit_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "MedicationOrders" AS t WHERE TRUE
UNION ALL
SELECT 'MedicationOrders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'pat_id' AS attribute, CAST(t."pat_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "MedicationOrders" AS t WHERE TRUE
UNION ALL
SELECT 'MedicationOrders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'medication' AS attribute, CAST(t."medication" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "MedicationOrders" AS t WHERE TRUE
UNION ALL
SELECT 'MedicationOrders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'dose_mg' AS attribute, CAST(t."dose_mg" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "MedicationOrders" AS t WHERE TRUE
UNION ALL
SELECT 'Prescription' AS relation, CAST(t."prescription_id" AS VARCHAR) AS row_key, 'prescription_id' AS attribute, CAST(t."prescription_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Prescription" AS t WHERE TRUE
UNION ALL
SELECT 'Prescription' AS relation, CAST(t."prescription_id" AS VARCHAR) AS row_key, 'order_id' AS attribute, CAST(t."order_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Prescription" AS t WHERE TRUE
UNION ALL
SELECT 'Prescription' AS relation, CAST(t."prescription_id" AS VARCHAR) AS row_key, 'pat_id' AS attribute, CAST(t."pat_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Prescription" AS t WHERE TRUE
UNION ALL
SELECT 'Prescription' AS relation, CAST(t."prescription_id" AS VARCHAR) AS row_key, 'medication' AS attribute, CAST(t."medication" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Prescription" AS t WHERE TRUE
UNION ALL
SELECT 'Prescription' AS relation, CAST(t."prescription_id" AS VARCHAR) AS row_key, 'issued' AS attribute, CAST(t."issued" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Prescription" AS t WHERE TRUE
UNION ALL
SELECT 'Patient' AS relation, CAST(t."pat_id" AS VARCHAR) AS row_key, 'pat_id' AS attribute, CAST(t."pat_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Patient" AS t WHERE TRUE
UNION ALL
SELECT 'Patient' AS relation, CAST(t."pat_id" AS VARCHAR) AS row_key, 'birth_year' AS attribute, CAST(t."birth_year" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Patient" AS t WHERE TRUE
UNION ALL
SELECT 'Patient' AS relation, CAST(t."pat_id" AS VARCHAR) AS row_key, 'sex' AS attribute, CAST(t."sex" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Patient" AS t WHERE TRUE
UNION ALL
SELECT 'Patient' AS relation, CAST(t."pat_id" AS VARCHAR) AS row_key, 'zip3' AS attribute, CAST(t."zip3" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Patient" AS t WHERE TRUE
UNION ALL
SELECT 'Patient' AS relation, CAST(t."pat_id" AS VARCHAR) AS row_key, 'name' AS attribute, CAST(t."name" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Patient" AS t WHERE TRUE

-- N4 sender_view
-- any

-- N4 recipient_view
-- any

-- N4 subject_view
-- any

-- N4 condition_view:recipient_treats_patient
SELECT DISTINCT CAST(q."recipient" AS VARCHAR) AS recipient, CAST(q."subject" AS VARCHAR) AS subject FROM (SELECT employee_id AS recipient, pat_id AS subject FROM TreatingRelationship) AS q

-- N4 data_view
SELECT 'DxCategory' AS relation, CAST(t."diagnosis" AS VARCHAR) AS row_key, 'diagnosis' AS attribute, CAST(t."diagnosis" AS VARCHAR) AS value, CAST(NULL AS VARCHAR) AS subject FROM "DxCategory" AS t WHERE COALESCE((t.hivstatus <> 'unknown'), FALSE)
UNION ALL
SELECT 'DxCategory' AS relation, CAST(t."diagnosis" AS VARCHAR) AS row_key, 'category' AS attribute, CAST(t."category" AS VARCHAR) AS value, CAST(NULL AS VARCHAR) AS subject FROM "DxCategory" AS t WHERE COALESCE((t.hivstatus <> 'unknown'), FALSE)
UNION ALL
SELECT 'DxCategory' AS relation, CAST(t."diagnosis" AS VARCHAR) AS row_key, 'hivstatus' AS attribute, CAST(t."hivstatus" AS VARCHAR) AS value, CAST(NULL AS VARCHAR) AS subject FROM "DxCategory" AS t WHERE COALESCE((t.hivstatus <> 'unknown'), FALSE)
UNION ALL
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'visit_id' AS attribute, CAST(t."visit_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE COALESCE((t.diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(t.note) LIKE '%hiv%'), FALSE)
UNION ALL
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'pat_id' AS attribute, CAST(t."pat_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE COALESCE((t.diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(t.note) LIKE '%hiv%'), FALSE)
UNION ALL
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'attending_id' AS attribute, CAST(t."attending_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE COALESCE((t.diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(t.note) LIKE '%hiv%'), FALSE)
UNION ALL
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'visit_date' AS attribute, CAST(t."visit_date" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE COALESCE((t.diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(t.note) LIKE '%hiv%'), FALSE)
UNION ALL
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'diagnosis' AS attribute, CAST(t."diagnosis" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE COALESCE((t.diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(t.note) LIKE '%hiv%'), FALSE)
UNION ALL
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'note' AS attribute, CAST(t."note" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE COALESCE((t.diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(t.note) LIKE '%hiv%'), FALSE)
UNION ALL
SELECT 'Discharge' AS relation, CAST(t."discharge_id" AS VARCHAR) AS row_key, 'discharge_id' AS attribute, CAST(t."discharge_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Discharge" AS t WHERE COALESCE((t.finaldiagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR t.visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%')), FALSE)
UNION ALL
SELECT 'Discharge' AS relation, CAST(t."discharge_id" AS VARCHAR) AS row_key, 'visit_id' AS attribute, CAST(t."visit_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Discharge" AS t WHERE COALESCE((t.finaldiagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR t.visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%')), FALSE)
UNION ALL
SELECT 'Discharge' AS relation, CAST(t."discharge_id" AS VARCHAR) AS row_key, 'pat_id' AS attribute, CAST(t."pat_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Discharge" AS t WHERE COALESCE((t.finaldiagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR t.visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%')), FALSE)
UNION ALL
SELECT 'Discharge' AS relation, CAST(t."discharge_id" AS VARCHAR) AS row_key, 'finaldiagnosis' AS attribute, CAST(t."finaldiagnosis" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Discharge" AS t WHERE COALESCE((t.finaldiagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR t.visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%')), FALSE)
UNION ALL
SELECT 'Discharge' AS relation, CAST(t."discharge_id" AS VARCHAR) AS row_key, 'discharge_date' AS attribute, CAST(t."discharge_date" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Discharge" AS t WHERE COALESCE((t.finaldiagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR t.visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%')), FALSE)
UNION ALL
SELECT 'MedicationOrders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'order_id' AS attribute, CAST(t."order_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "MedicationOrders" AS t WHERE COALESCE((t.medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR t.visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%')), FALSE)
UNION ALL
SELECT 'MedicationOrders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'visit_id' AS attribute, CAST(t."visit_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "MedicationOrders" AS t WHERE COALESCE((t.medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR t.visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%')), FALSE)
UNION ALL
SELECT 'MedicationOrders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'pat_id' AS attribute, CAST(t."pat_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "MedicationOrders" AS t WHERE COALESCE((t.medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR t.visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%')), FALSE)
UNION ALL
SELECT 'MedicationOrders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'medication' AS attribute, CAST(t."medication" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "MedicationOrders" AS t WHERE COALESCE((t.medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR t.visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%')), FALSE)
UNION ALL
SELECT 'MedicationOrders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'dose_mg' AS attribute, CAST(t."dose_mg" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "MedicationOrders" AS t WHERE COALESCE((t.medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR t.visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%')), FALSE)
UNION ALL
SELECT 'Prescription' AS relation, CAST(t."prescription_id" AS VARCHAR) AS row_key, 'prescription_id' AS attribute, CAST(t."prescription_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Prescription" AS t WHERE COALESCE((t.medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR t.order_id IN (SELECT order_id FROM MedicationOrders WHERE medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%'))), FALSE)
UNION ALL
SELECT 'Prescription' AS relation, CAST(t."prescription_id" AS VARCHAR) AS row_key, 'order_id' AS attribute, CAST(t."order_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Prescription" AS t WHERE COALESCE((t.medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR t.order_id IN (SELECT order_id FROM MedicationOrders WHERE medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%'))), FALSE)
UNION ALL
SELECT 'Prescription' AS relation, CAST(t."prescription_id" AS VARCHAR) AS row_key, 'pat_id' AS attribute, CAST(t."pat_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Prescription" AS t WHERE COALESCE((t.medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR t.order_id IN (SELECT order_id FROM MedicationOrders WHERE medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%'))), FALSE)
UNION ALL
SELECT 'Prescription' AS relation, CAST(t."prescription_id" AS VARCHAR) AS row_key, 'medication' AS attribute, CAST(t."medication" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Prescription" AS t WHERE COALESCE((t.medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR t.order_id IN (SELECT order_id FROM MedicationOrders WHERE medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%'))), FALSE)
UNION ALL
SELECT 'Prescription' AS relation, CAST(t."prescription_id" AS VARCHAR) AS row_key, 'issued' AS attribute, CAST(t."issued" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Prescription" AS t WHERE COALESCE((t.medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR t.order_id IN (SELECT order_id FROM MedicationOrders WHERE medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%'))), FALSE)
UNION ALL
SELECT 'Discharge' AS relation, CAST(t."discharge_id" AS VARCHAR) AS row_key, 'finaldiagnosis' AS attribute, CAST(t."finaldiagnosis" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Discharge" AS t WHERE COALESCE(t."finaldiagnosis" IN (SELECT "__p_u1"."diagnosis" FROM "DxCategory" AS "__p_u1" WHERE COALESCE((__p_u1.hivstatus <> 'unknown'), FALSE)), FALSE)
UNION ALL
SELECT 'Visit' AS relation, CAST(t."visit_id" AS VARCHAR) AS row_key, 'diagnosis' AS attribute, CAST(t."diagnosis" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Visit" AS t WHERE COALESCE(t."diagnosis" IN (SELECT "__p_u2"."diagnosis" FROM "DxCategory" AS "__p_u2" WHERE COALESCE((__p_u2.hivstatus <> 'unknown'), FALSE)), FALSE)
UNION ALL
SELECT 'Discharge' AS relation, CAST(t."discharge_id" AS VARCHAR) AS row_key, 'visit_id' AS attribute, CAST(t."visit_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Discharge" AS t WHERE COALESCE(t."visit_id" IN (SELECT "__p_u3"."visit_id" FROM "Visit" AS "__p_u3" WHERE COALESCE((__p_u3.diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(__p_u3.note) LIKE '%hiv%'), FALSE)), FALSE)
UNION ALL
SELECT 'MedicationOrders' AS relation, CAST(t."order_id" AS VARCHAR) AS row_key, 'visit_id' AS attribute, CAST(t."visit_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "MedicationOrders" AS t WHERE COALESCE(t."visit_id" IN (SELECT "__p_u4"."visit_id" FROM "Visit" AS "__p_u4" WHERE COALESCE((__p_u4.diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(__p_u4.note) LIKE '%hiv%'), FALSE)), FALSE)
UNION ALL
SELECT 'Prescription' AS relation, CAST(t."prescription_id" AS VARCHAR) AS row_key, 'order_id' AS attribute, CAST(t."order_id" AS VARCHAR) AS value, CAST(t."pat_id" AS VARCHAR) AS subject FROM "Prescription" AS t WHERE COALESCE(t."order_id" IN (SELECT "__p_u5"."order_id" FROM "MedicationOrders" AS "__p_u5" WHERE COALESCE((__p_u5.medication IN ('dolutegravir', 'tenofovir', 'emtricitabine') OR __p_u5.visit_id IN (SELECT visit_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus <> 'unknown') OR LOWER(note) LIKE '%hiv%')), FALSE)), FALSE)

