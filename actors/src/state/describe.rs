//! A state in a canonical text, for tests that compare states.

use super::*;

impl WorkspaceState {
    /// Everything the state holds, in a canonical text: every record (as its raw JSON),
    /// each table's visible order, and every secondary map, sorted. Two states that
    /// describe alike answer every request alike (tests compare a restored state with
    /// the one it was written from).
    #[cfg(test)]
    pub(crate) fn describe(&self) -> String {
        use std::fmt::Write;
        fn table<
            K: std::fmt::Debug + Ord + Clone + std::hash::Hash + Eq + MinKey + 'static,
            V: ?Sized,
        >(
            out: &mut String,
            name: &str,
            t: crate::table::TableRef<'_, K, V>,
            raw: impl Fn(&V) -> String,
        ) {
            let mut rows: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{name} {k:?} {}", raw(v)))
                .collect();
            rows.sort();
            for r in rows {
                writeln!(out, "{r}").unwrap();
            }
            for (stamp, k, _) in t.rows_from(None, None) {
                writeln!(out, "{name} order {stamp:?} {k:?}").unwrap();
            }
        }
        fn sorted<T: std::fmt::Debug>(
            out: &mut String,
            name: &str,
            items: impl Iterator<Item = T>,
        ) {
            let mut lines: Vec<String> = items.map(|i| format!("{name} {i:?}")).collect();
            lines.sort();
            for l in lines {
                writeln!(out, "{l}").unwrap();
            }
        }
        let json = |r: Record| r.to_json();
        let mut out = String::new();
        writeln!(
            out,
            "region {:?} last_stamp {:?}",
            self.region, self.last_stamp
        )
        .unwrap();
        table(&mut out, "user", self.users.all(), |u| {
            json(Record::User(u.clone()))
        });
        sorted(
            &mut out,
            "stage",
            self.stages
                .iter()
                .map(|(_, s)| json(Record::Stage((**s).clone()))),
        );
        table(&mut out, "company", self.companies.all(), |c| {
            json(Record::Company(c.clone()))
        });
        table(&mut out, "contact", self.contacts.all(), |c| {
            format!(
                "{} {:?} {:?}",
                json(Record::Contact(c.raw.clone())),
                c.phone,
                c.mobile
            )
        });
        table(&mut out, "job", self.jobs.all(), |j| {
            json(Record::Job(j.clone()))
        });
        table(&mut out, "candidate", self.candidates.all(), |c| {
            format!(
                "{} {:?} {:?}",
                json(Record::Candidate(Box::new(c.raw()))),
                c.phone(),
                c.mobile()
            )
        });
        table(&mut out, "application", self.applications(), |c| {
            c.id().to_string()
        });
        table(&mut out, "note", self.notes.all(), |n| {
            json(Record::Note(n.raw()))
        });
        table(&mut out, "task", self.tasks.all(), |t| {
            json(Record::Task(t.clone()))
        });
        table(&mut out, "attachment", self.attachments.all(), |a| {
            json(Record::Attachment(a.raw()))
        });
        sorted(&mut out, "users_by_email", self.users_by_email.iter());
        // Row numbers differ between states built in another order: their records' ids
        // stand for them.
        let candidate = |row: u32| self.candidates.at_row(row).map(|(id, _)| *id);
        let attachment = |row: u32| self.attachments.at_row(row).map(|(id, _)| id.clone());
        sorted(
            &mut out,
            "person",
            self.persons.entries().map(|(p, row)| (p, candidate(*row))),
        );
        sorted(
            &mut out,
            "cv_by_row",
            self.cv_by_row.entries().map(|(r, at)| (r, attachment(*at))),
        );
        sorted(&mut out, "notes_by_parent", self.notes_by_parent.entries());
        sorted(
            &mut out,
            "attachments_by_parent",
            self.attachments_by_parent
                .entries()
                .map(|(kind, parent, at)| (kind, parent, attachment(*at))),
        );
        let job = |row: u32| self.jobs.at_row(row).map(|(id, _)| *id);
        let contact = |row: u32| self.contacts.at_row(row).map(|(id, _)| *id);
        for (name, index) in self.dependents.entries() {
            let of: &dyn Fn(u32) -> Option<Uuid> = match name {
                "jobs_by_company" | "jobs_by_recruiter" => &job,
                "contacts_by_company" => &contact,
                _ => &candidate,
            };
            sorted(
                &mut out,
                name,
                index.entries().map(|(p, row)| (p, of(*row))),
            );
        }
        sorted(&mut out, "note_ref", self.note_refs.iter());
        sorted(&mut out, "task_ref", self.task_refs.iter());
        sorted(&mut out, "phone_key", self.phone_pairs().iter());
        sorted(&mut out, "email_key", self.email_pairs().iter());
        out
    }
}
