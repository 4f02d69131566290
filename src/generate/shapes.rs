//! The records as the snapshot writes them: the domain's own raw records
//! (`actors::model`), made from the world's and the people's compact forms. Only an
//! attachment has a shape of its own in the document (its bytes, as `content_base64`),
//! which `activity::AttachmentOut` writes.

use super::*;
use actors::model::{Candidate, Company, Contact, Job, JobSalary, PipelineStage, User};

impl World {
    pub(super) fn user_record(&self, u: &UserRec) -> User {
        User {
            id: u.id,
            name: Some(u.name.clone()),
            email: Some(u.email.clone()),
            role: Some(u.role.to_string()),
            status: u.status,
            created_at: stamp(u.created),
            updated_at: stamp(u.updated),
        }
    }

    pub(super) fn stage_record(&self, s: &StageRec) -> PipelineStage {
        PipelineStage {
            id: s.id,
            name: Some(s.name.to_string()),
            stage_type: Some(s.stage_type.to_string()),
        }
    }

    pub(super) fn company_record(&self, c: &CompanyRec) -> Company {
        Company {
            id: c.id,
            name: Some(c.name.clone()),
            phone: c.switchboard.map(Typed::render),
            website_url: Some(format!("https://www.{}", c.domain)),
            linkedin_url: c
                .linkedin
                .then(|| format!("https://www.linkedin.com/company/{}", slug(&c.name))),
            status: Some(c.status.to_string()),
            is_archived: c.archived,
            owner_id: c.owner.map(|u| self.user_id(u)),
            created_at: stamp(c.created),
            updated_at: stamp(c.updated),
        }
    }

    pub(super) fn contact_record(&self, c: &ContactRec) -> Contact {
        Contact {
            id: c.id,
            name: Some(c.name.clone()),
            email: c.email.clone(),
            phone: c.phone.map(Typed::render),
            mobile: c.mobile.map(Typed::render),
            job_title: Some(c.job_title.to_string()),
            department: c.department.map(str::to_string),
            company_id: self.companies[c.company].id,
            linkedin_url: c.linkedin.clone(),
            is_main_contact: c.main,
            owner_id: c.owner.map(|u| self.user_id(u)),
            created_at: stamp(c.created),
            updated_at: stamp(c.updated),
        }
    }

    pub(super) fn job_record(&self, j: &JobRec) -> Job {
        Job {
            id: j.id,
            title: Some(j.title.to_string()),
            position: Some(j.position.clone()),
            company_id: j.company.map(|c| self.companies[c].id),
            status: Some(JOB_STATUSES[j.status].to_string()),
            role_status_id: Some(self.job_status_ids[j.status].to_string()),
            is_archived: j.archived,
            on_careers_page: j.careers,
            salary: Some(JobSalary {
                amount: Some(j.salary.0.into()),
                currency: Some(j.salary.1.to_string()),
                kind: Some(j.salary.2.to_string()),
            }),
            assigned_recruiter_id: j.assigned.map(|u| self.user_id(u)),
            created_by: Some(self.user_id(j.created_by)),
            hiring_manager: j.hiring_manager.map(|c| self.contacts[c].name.clone()),
            created_at: stamp(j.created),
            updated_at: stamp(j.updated),
        }
    }

    /// One of a person's candidate rows.
    pub(super) fn candidate_row(
        &self,
        p: &Person,
        row: &Row,
        email: &Option<String>,
        phones: &Phones,
    ) -> Candidate {
        Candidate {
            id: row.id,
            person_id: p.id,
            job_id: row.job.map(|j| self.jobs[j].id),
            name: Some(p.name.clone()),
            email: email.clone(),
            phone: phones.phone.clone(),
            mobile: phones.mobile.clone(),
            job_title: p.job_title.map(str::to_string),
            company: p.company.map(str::to_string),
            location: p.location.map(str::to_string),
            linkedin_url: p.linkedin.clone(),
            stage_id: row.stage.map(|s| self.stages[s].id),
            outcome: row.outcome,
            rejected_at: row.rejected_at.map(stamp),
            owner_id: row.owner.map(|u| self.user_id(u)),
            salary: Some(p.salary.clone()),
            consent: Some(p.consent.clone()),
            created_at: stamp(row.created),
            updated_at: stamp(row.updated),
        }
    }
}
