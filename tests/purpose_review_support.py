"""A scratch gym schema and policy text whose extracted draft holds G1 ("A trainer may view a member's
workouts.") with a purpose question: it states no purpose while G2 names one (issue 27). Shared by the
extractor/review/CLI tests and the review page's HTTP test; none of the shipped domains' words."""

from __future__ import annotations

GYM_SQL = [
    "CREATE TABLE Member (member_id INTEGER PRIMARY KEY, name VARCHAR, weight INTEGER)",
    "CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, job VARCHAR)",
    "CREATE TABLE Workout (workout_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id), "
    "exercise VARCHAR, minutes INTEGER)",
    "CREATE TABLE Timetable (class_id INTEGER PRIMARY KEY, title VARCHAR, day VARCHAR)",
    "INSERT INTO Member VALUES (1, 'A', 70), (2, 'B', 80)",
    "INSERT INTO Staff VALUES (1, 'trainer'), (2, 'dietitian')",
    "INSERT INTO Workout VALUES (1, 1, 'run', 30)",
    "INSERT INTO Timetable VALUES (1, 'yoga', 'mon')",
]
GYM_TEXT = (
    "G1. A trainer may view a member's workouts.\n"
    "G2. A dietitian may view a member's weight for nutrition.\n"
    "G3. A member has the right to receive the workouts about them.\n"
    "G4. The timetable is not about any member and may be disclosed to anyone.\n"
)
