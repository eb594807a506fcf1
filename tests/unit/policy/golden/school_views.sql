-- S1 sender_view
SELECT CAST(t."staff_id" AS VARCHAR) AS agent FROM "Staff" AS t WHERE TRUE

-- S1 recipient_view
SELECT CAST(t."staff_id" AS VARCHAR) AS agent FROM "Staff" AS t WHERE TRUE

-- S1 subject_view
SELECT CAST(t."student_id" AS VARCHAR) AS agent FROM "Student" AS t WHERE TRUE

-- S1 condition_view:legitimate_interest
SELECT DISTINCT CAST(q."recipient" AS VARCHAR) AS recipient, CAST(q."subject" AS VARCHAR) AS subject FROM (WITH RECURSIVE above(boss, teacher) AS (SELECT teacher_id, teacher_id FROM Course UNION SELECT s.supervisor_id, above.teacher FROM above JOIN Supervises AS s ON s.supervisee_id = above.boss) SELECT DISTINCT above.boss AS recipient, e.student_id AS subject FROM above JOIN Course AS c ON c.teacher_id = above.teacher JOIN Enrollment AS e ON e.course_id = c.course_id) AS q

-- S1 data_view
SELECT 'Enrollment' AS relation, REPLACE(REPLACE(CAST(t."student_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."course_id" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Enrollment" AS t WHERE TRUE
UNION ALL
SELECT 'Enrollment' AS relation, REPLACE(REPLACE(CAST(t."student_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."course_id" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'course_id' AS attribute, CAST(t."course_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Enrollment" AS t WHERE TRUE
UNION ALL
SELECT 'Grade' AS relation, CAST(t."grade_id" AS VARCHAR) AS row_key, 'grade_id' AS attribute, CAST(t."grade_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Grade" AS t WHERE TRUE
UNION ALL
SELECT 'Grade' AS relation, CAST(t."grade_id" AS VARCHAR) AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Grade" AS t WHERE TRUE
UNION ALL
SELECT 'Grade' AS relation, CAST(t."grade_id" AS VARCHAR) AS row_key, 'course_id' AS attribute, CAST(t."course_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Grade" AS t WHERE TRUE
UNION ALL
SELECT 'Grade' AS relation, CAST(t."grade_id" AS VARCHAR) AS row_key, 'term' AS attribute, CAST(t."term" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Grade" AS t WHERE TRUE
UNION ALL
SELECT 'Grade' AS relation, CAST(t."grade_id" AS VARCHAR) AS row_key, 'score' AS attribute, CAST(t."score" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Grade" AS t WHERE TRUE
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'attendance_id' AS attribute, CAST(t."attendance_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE TRUE
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE TRUE
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'course_id' AS attribute, CAST(t."course_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE TRUE
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'day' AS attribute, CAST(t."day" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE TRUE
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'present' AS attribute, CAST(t."present" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE TRUE
UNION ALL
SELECT 'Student' AS relation, CAST(t."student_id" AS VARCHAR) AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Student" AS t WHERE TRUE
UNION ALL
SELECT 'Student' AS relation, CAST(t."student_id" AS VARCHAR) AS row_key, 'name' AS attribute, CAST(t."name" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Student" AS t WHERE TRUE
UNION ALL
SELECT 'Student' AS relation, CAST(t."student_id" AS VARCHAR) AS row_key, 'grade_level' AS attribute, CAST(t."grade_level" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Student" AS t WHERE TRUE
UNION ALL
SELECT 'Student' AS relation, CAST(t."student_id" AS VARCHAR) AS row_key, 'birth_year' AS attribute, CAST(t."birth_year" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Student" AS t WHERE TRUE

-- S7 sender_view
-- any

-- S7 recipient_view
SELECT CAST(t."vendor_id" AS VARCHAR) AS agent FROM "Vendor" AS t WHERE TRUE

-- S7 subject_view
SELECT CAST(t."student_id" AS VARCHAR) AS agent FROM "Student" AS t WHERE TRUE

-- S7 condition_view:parental_consent
SELECT DISTINCT CAST(q."subject" AS VARCHAR) AS subject, CAST(q."purpose" AS VARCHAR) AS purpose FROM (SELECT student_id AS subject, purpose FROM ParentConsent WHERE granted) AS q

-- S7 condition_view:under_13
SELECT DISTINCT CAST(q."subject" AS VARCHAR) AS subject FROM (SELECT student_id AS subject FROM Student WHERE birth_year > 2011) AS q

-- S7 data_view
SELECT 'Enrollment' AS relation, REPLACE(REPLACE(CAST(t."student_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."course_id" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Enrollment" AS t WHERE TRUE
UNION ALL
SELECT 'Enrollment' AS relation, REPLACE(REPLACE(CAST(t."student_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."course_id" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'course_id' AS attribute, CAST(t."course_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Enrollment" AS t WHERE TRUE
UNION ALL
SELECT 'Grade' AS relation, CAST(t."grade_id" AS VARCHAR) AS row_key, 'grade_id' AS attribute, CAST(t."grade_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Grade" AS t WHERE TRUE
UNION ALL
SELECT 'Grade' AS relation, CAST(t."grade_id" AS VARCHAR) AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Grade" AS t WHERE TRUE
UNION ALL
SELECT 'Grade' AS relation, CAST(t."grade_id" AS VARCHAR) AS row_key, 'course_id' AS attribute, CAST(t."course_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Grade" AS t WHERE TRUE
UNION ALL
SELECT 'Grade' AS relation, CAST(t."grade_id" AS VARCHAR) AS row_key, 'term' AS attribute, CAST(t."term" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Grade" AS t WHERE TRUE
UNION ALL
SELECT 'Grade' AS relation, CAST(t."grade_id" AS VARCHAR) AS row_key, 'score' AS attribute, CAST(t."score" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Grade" AS t WHERE TRUE
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'attendance_id' AS attribute, CAST(t."attendance_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE TRUE
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE TRUE
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'course_id' AS attribute, CAST(t."course_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE TRUE
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'day' AS attribute, CAST(t."day" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE TRUE
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'present' AS attribute, CAST(t."present" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE TRUE
UNION ALL
SELECT 'Student' AS relation, CAST(t."student_id" AS VARCHAR) AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Student" AS t WHERE TRUE
UNION ALL
SELECT 'Student' AS relation, CAST(t."student_id" AS VARCHAR) AS row_key, 'name' AS attribute, CAST(t."name" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Student" AS t WHERE TRUE
UNION ALL
SELECT 'Student' AS relation, CAST(t."student_id" AS VARCHAR) AS row_key, 'grade_level' AS attribute, CAST(t."grade_level" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Student" AS t WHERE TRUE
UNION ALL
SELECT 'Student' AS relation, CAST(t."student_id" AS VARCHAR) AS row_key, 'birth_year' AS attribute, CAST(t."birth_year" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Student" AS t WHERE TRUE
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE EXISTS (SELECT 1 FROM "Enrollment" AS "__p_u1" WHERE "__p_u1"."student_id" = t."student_id" AND "__p_u1"."course_id" = t."course_id" AND (TRUE))
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'course_id' AS attribute, CAST(t."course_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE EXISTS (SELECT 1 FROM "Enrollment" AS "__p_u2" WHERE "__p_u2"."student_id" = t."student_id" AND "__p_u2"."course_id" = t."course_id" AND (TRUE))
UNION ALL
SELECT 'Discipline' AS relation, CAST(t."incident_id" AS VARCHAR) AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Discipline" AS t WHERE COALESCE(t."student_id" IN (SELECT "__p_u3"."student_id" FROM "Student" AS "__p_u3" WHERE TRUE), FALSE)
UNION ALL
SELECT 'Enrollment' AS relation, REPLACE(REPLACE(CAST(t."student_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."course_id" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Enrollment" AS t WHERE COALESCE(t."student_id" IN (SELECT "__p_u4"."student_id" FROM "Student" AS "__p_u4" WHERE TRUE), FALSE)
UNION ALL
SELECT 'Grade' AS relation, CAST(t."grade_id" AS VARCHAR) AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Grade" AS t WHERE COALESCE(t."student_id" IN (SELECT "__p_u5"."student_id" FROM "Student" AS "__p_u5" WHERE TRUE), FALSE)
UNION ALL
SELECT 'Guardian' AS relation, REPLACE(REPLACE(CAST(t."parent_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."student_id" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "Guardian" AS t WHERE COALESCE(t."student_id" IN (SELECT "__p_u6"."student_id" FROM "Student" AS "__p_u6" WHERE TRUE), FALSE)
UNION ALL
SELECT 'HealthRecord' AS relation, CAST(t."record_id" AS VARCHAR) AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "HealthRecord" AS t WHERE COALESCE(t."student_id" IN (SELECT "__p_u7"."student_id" FROM "Student" AS "__p_u7" WHERE TRUE), FALSE)
UNION ALL
SELECT 'ParentConsent' AS relation, REPLACE(REPLACE(CAST(t."student_id" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."purpose" AS VARCHAR), '\', '\\'), '|', '\|') AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, CAST(t."student_id" AS VARCHAR) AS subject FROM "ParentConsent" AS t WHERE COALESCE(t."student_id" IN (SELECT "__p_u8"."student_id" FROM "Student" AS "__p_u8" WHERE TRUE), FALSE)
UNION ALL
SELECT 'Attendance' AS relation, CAST(t."attendance_id" AS VARCHAR) AS row_key, 'student_id' AS attribute, CAST(t."student_id" AS VARCHAR) AS value, (SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST("__p_s1"."student_id" AS VARCHAR)) END FROM "Enrollment" AS "__p_s1" WHERE "__p_s1"."student_id" = t."student_id" AND "__p_s1"."course_id" = t."course_id") AS subject FROM "Attendance" AS t WHERE EXISTS (SELECT 1 FROM "Enrollment" AS "__p_u9" WHERE "__p_u9"."student_id" = t."student_id" AND "__p_u9"."course_id" = t."course_id" AND (COALESCE(__p_u9."student_id" IN (SELECT "__p_u4"."student_id" FROM "Student" AS "__p_u4" WHERE TRUE), FALSE)))

