//! Edits of the allow-listed fields of candidates (personal fields apply to every
//! row of the person, the owner to the row edited), contacts, companies and jobs.

use super::*;

pub(super) fn set_salary_amount(
    salary: &mut Option<CandidateSalary>,
    change: Option<Change<Number>>,
    pick: fn(&mut CandidateSalary) -> &mut Option<Number>,
) {
    if let Some(c) = change {
        *pick(salary.get_or_insert_with(Default::default)) = c.into_option();
    }
}

pub(super) fn set_salary_text(
    salary: &mut Option<CandidateSalary>,
    change: Option<Change<String>>,
    pick: fn(&mut CandidateSalary) -> &mut Option<String>,
) {
    if let Some(c) = change {
        *pick(salary.get_or_insert_with(Default::default)) = c.into_option();
    }
}

pub(super) fn patch_candidate(
    state: &WorkspaceState,
    id: Uuid,
    p: CandidatePatch,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let row = state
        .candidates
        .get_visible(&id)
        .ok_or_else(|| WriteError::NotFound(format!("no candidate with id {id}")))?;
    if let Some(Change::Set(u)) = p.owning_recruiter_id {
        check_user(state, "owning_recruiter_id", u)?;
    }
    // Personal attributes are carried on every row of the person, so they change on all
    // of them together; the owner belongs to the row.
    let rows: Vec<Uuid> = if p.touches_person() {
        state
            .person_rows_ref(row.person_id())
            .iter()
            .map(|r| r.id())
            .collect()
    } else {
        vec![id]
    };
    for rid in rows {
        let mut c = state
            .candidates
            .get(&rid)
            .expect("a row of the person")
            .raw();
        apply(&mut c.name, p.name.clone());
        apply(&mut c.email, p.email.clone());
        apply(&mut c.phone, p.phone.clone());
        apply(&mut c.job_title, p.job_title.clone());
        apply(&mut c.company, p.current_company.clone());
        set_salary_amount(&mut c.salary, p.current_salary_amount.clone(), |s| {
            &mut s.current_amount
        });
        set_salary_text(&mut c.salary, p.current_salary_currency.clone(), |s| {
            &mut s.current_currency
        });
        set_salary_amount(&mut c.salary, p.expected_salary_amount.clone(), |s| {
            &mut s.expected_amount
        });
        set_salary_text(&mut c.salary, p.expected_salary_currency.clone(), |s| {
            &mut s.expected_currency
        });
        if rid == id {
            apply(&mut c.owner_id, p.owning_recruiter_id.clone());
        }
        c.updated_at = stamp;
        out.push(Record::Candidate(Box::new(c)));
    }
    Ok(Written::Updated(RecordKind::Candidate, id))
}

pub(super) fn patch_contact(
    state: &WorkspaceState,
    id: Uuid,
    p: ContactPatch,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let mut c = state
        .contacts
        .get_visible(&id)
        .ok_or_else(|| WriteError::NotFound(format!("no contact with id {id}")))?
        .raw
        .clone();
    if let Some(company) = p.company_id {
        check_company(state, "company_id", company)?;
        c.company_id = company;
    }
    if let Some(Change::Set(u)) = p.owning_recruiter_id {
        check_user(state, "owning_recruiter_id", u)?;
    }
    apply(&mut c.name, p.name);
    apply(&mut c.email, p.email);
    apply(&mut c.phone, p.phone);
    apply(&mut c.owner_id, p.owning_recruiter_id);
    c.updated_at = stamp;
    out.push(Record::Contact(c));
    Ok(Written::Updated(RecordKind::Contact, id))
}

pub(super) fn patch_company(
    state: &WorkspaceState,
    id: Uuid,
    p: CompanyPatch,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let mut c = (**state
        .companies
        .get_visible(&id)
        .ok_or_else(|| WriteError::NotFound(format!("no company with id {id}")))?)
    .clone();
    if let Some(Change::Set(u)) = p.owning_recruiter_id {
        check_user(state, "owning_recruiter_id", u)?;
    }
    apply(&mut c.name, p.name);
    apply(&mut c.phone, p.phone);
    apply(&mut c.owner_id, p.owning_recruiter_id);
    c.updated_at = stamp;
    out.push(Record::Company(c));
    Ok(Written::Updated(RecordKind::Company, id))
}

pub(super) fn patch_job(
    state: &WorkspaceState,
    id: Uuid,
    p: JobPatch,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let mut j = (**state
        .jobs
        .get_visible(&id)
        .ok_or_else(|| WriteError::NotFound(format!("no job with id {id}")))?)
    .clone();
    if let Some(Change::Set(c)) = p.company_id {
        check_company(state, "company_id", c)?;
    }
    if let Some(Change::Set(u)) = p.owning_recruiter_id {
        check_user(state, "owning_recruiter_id", u)?;
    }
    apply(&mut j.title, p.title);
    apply(&mut j.company_id, p.company_id);
    // `owning_recruiter_id` of a job is its assigned recruiter (falling back to its
    // creator when cleared).
    apply(&mut j.assigned_recruiter_id, p.owning_recruiter_id);
    if let Some(c) = p.salary_amount {
        j.salary.get_or_insert_with(Default::default).amount = c.into_option();
    }
    if let Some(c) = p.salary_currency {
        j.salary.get_or_insert_with(Default::default).currency = c.into_option();
    }
    // `live: false` archives (and so unpublishes); `live: true` restores, published again
    // exactly when the job is on the careers page.
    if let Some(live) = p.live {
        j.is_archived = !live;
    }
    j.updated_at = stamp;
    out.push(Record::Job(j));
    Ok(Written::Updated(RecordKind::Job, id))
}
