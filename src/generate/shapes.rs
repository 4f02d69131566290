//! The records as the snapshot writes them, borrowing from the world, so writing a
//! record allocates little.

use super::*;

#[derive(Serialize)]
pub(super) struct WorkspaceOut<'a> {
    pub(super) id: Uuid,
    pub(super) name: &'a str,
    pub(super) default_region: &'a str,
}

#[derive(Serialize)]
pub(super) struct UserOut<'a> {
    pub(super) id: Uuid,
    pub(super) name: &'a str,
    pub(super) email: &'a str,
    pub(super) role: &'a str,
    pub(super) status: &'static str,
    pub(super) created_at: Stamp,
    pub(super) updated_at: Stamp,
}

impl Serialize for StageRec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut st = s.serialize_struct("PipelineStage", 3)?;
        st.serialize_field("id", &self.id)?;
        st.serialize_field("name", self.name)?;
        st.serialize_field("stage_type", self.stage_type)?;
        st.end()
    }
}

#[derive(Serialize)]
pub(super) struct CompanyOut<'a> {
    pub(super) id: Uuid,
    pub(super) name: &'a str,
    pub(super) phone: Option<&'a str>,
    pub(super) website_url: Option<&'a str>,
    pub(super) linkedin_url: Option<&'a str>,
    pub(super) status: &'a str,
    pub(super) is_archived: bool,
    pub(super) owner_id: Option<Uuid>,
    pub(super) created_at: Stamp,
    pub(super) updated_at: Stamp,
}

#[derive(Serialize)]
pub(super) struct ContactOut<'a> {
    pub(super) id: Uuid,
    pub(super) name: &'a str,
    pub(super) email: Option<&'a str>,
    pub(super) phone: Option<&'a str>,
    pub(super) mobile: Option<&'a str>,
    pub(super) job_title: Option<&'a str>,
    pub(super) department: Option<&'a str>,
    pub(super) company_id: Uuid,
    pub(super) linkedin_url: Option<&'a str>,
    pub(super) is_main_contact: bool,
    pub(super) owner_id: Option<Uuid>,
    pub(super) created_at: Stamp,
    pub(super) updated_at: Stamp,
}

#[derive(Serialize)]
pub(super) struct JobSalaryOut<'a> {
    pub(super) amount: u32,
    pub(super) currency: &'a str,
    #[serde(rename = "type")]
    pub(super) kind: &'a str,
}

#[derive(Serialize)]
pub(super) struct JobOut<'a> {
    pub(super) id: Uuid,
    pub(super) title: &'a str,
    pub(super) position: &'a str,
    pub(super) company_id: Option<Uuid>,
    pub(super) status: &'a str,
    pub(super) role_status_id: Uuid,
    pub(super) is_archived: bool,
    pub(super) on_careers_page: bool,
    pub(super) salary: JobSalaryOut<'a>,
    pub(super) assigned_recruiter_id: Option<Uuid>,
    pub(super) created_by: Uuid,
    pub(super) hiring_manager: Option<&'a str>,
    pub(super) created_at: Stamp,
    pub(super) updated_at: Stamp,
}

#[derive(Serialize)]
pub(super) struct CandidateOut<'a> {
    pub(super) id: Uuid,
    pub(super) person_id: Uuid,
    pub(super) job_id: Option<Uuid>,
    pub(super) name: &'a str,
    pub(super) email: Option<&'a str>,
    pub(super) phone: Option<&'a str>,
    pub(super) mobile: Option<&'a str>,
    pub(super) job_title: Option<&'a str>,
    pub(super) company: Option<&'a str>,
    pub(super) location: Option<&'a str>,
    pub(super) linkedin_url: Option<&'a str>,
    pub(super) stage_id: Option<Uuid>,
    pub(super) outcome: Option<&'static str>,
    pub(super) rejected_at: Option<Stamp>,
    pub(super) owner_id: Option<Uuid>,
    pub(super) salary: &'a SalaryOut,
    pub(super) consent: &'a ConsentOut,
    pub(super) created_at: Stamp,
    pub(super) updated_at: Stamp,
}

impl<'a> CandidateOut<'a> {
    pub(super) fn new(
        world: &World,
        p: &'a Person,
        row: &Row,
        email: &'a Option<String>,
        phones: &'a Phones,
    ) -> Self {
        CandidateOut {
            id: row.id,
            person_id: p.id,
            job_id: row.job.map(|j| world.jobs[j].id),
            name: &p.name,
            email: email.as_deref(),
            phone: phones.phone.as_deref(),
            mobile: phones.mobile.as_deref(),
            job_title: p.job_title,
            company: p.company,
            location: p.location,
            linkedin_url: p.linkedin.as_deref(),
            stage_id: row.stage.map(|s| world.stages[s].id),
            outcome: row.outcome.map(|o| match o {
                Outcome::Placed => "placed",
                Outcome::Rejected => "rejected",
            }),
            rejected_at: row.rejected_at.map(stamp),
            owner_id: row.owner.map(|u| world.user_id(u)),
            salary: &p.salary,
            consent: &p.consent,
            created_at: stamp(row.created),
            updated_at: stamp(row.updated),
        }
    }
}
