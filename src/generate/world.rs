//! The organisation: users, stages, companies, contacts and jobs, built once and kept
//! in memory (about a tenth of the people in rows).

use super::*;

pub(super) struct UserRec {
    pub(super) id: Uuid,
    pub(super) name: String,
    pub(super) email: String,
    pub(super) role: &'static str,
    pub(super) status: UserStatus,
    pub(super) created: i64,
    pub(super) updated: i64,
}

pub(super) struct StageRec {
    pub(super) id: Uuid,
    pub(super) name: &'static str,
    pub(super) stage_type: &'static str,
}

pub(super) struct CompanyRec {
    pub(super) id: Uuid,
    pub(super) name: String,
    pub(super) domain: String,
    pub(super) switchboard: Option<Typed>,
    pub(super) status: &'static str,
    pub(super) archived: bool,
    pub(super) owner: Option<usize>,
    pub(super) linkedin: bool,
    pub(super) created: i64,
    pub(super) updated: i64,
}

pub(super) struct ContactRec {
    pub(super) id: Uuid,
    pub(super) company: usize,
    pub(super) name: String,
    pub(super) email: Option<String>,
    pub(super) phone: Option<Typed>,
    pub(super) mobile: Option<Typed>,
    pub(super) job_title: &'static str,
    pub(super) department: Option<&'static str>,
    pub(super) main: bool,
    pub(super) owner: Option<usize>,
    pub(super) linkedin: Option<String>,
    pub(super) created: i64,
    pub(super) updated: i64,
}

pub(super) struct JobRec {
    pub(super) id: Uuid,
    pub(super) title: &'static str,
    pub(super) position: String,
    pub(super) company: Option<usize>,
    pub(super) status: usize,
    pub(super) archived: bool,
    pub(super) careers: bool,
    pub(super) salary: (u32, &'static str, &'static str),
    pub(super) assigned: Option<usize>,
    pub(super) created_by: usize,
    pub(super) hiring_manager: Option<usize>,
    pub(super) created: i64,
    pub(super) updated: i64,
}

/// Everything shared by all people; small (about a tenth of the people in rows).
pub(super) struct World {
    pub(super) seed: u64,
    pub(super) people: usize,
    pub(super) workspace_id: Uuid,
    pub(super) workspace_name: &'static str,
    pub(super) slug: String,
    pub(super) users: Vec<UserRec>,
    pub(super) active: Vec<usize>,
    pub(super) invited: Vec<usize>,
    pub(super) removed: Vec<usize>,
    pub(super) stages: Vec<StageRec>,
    /// Index in `stages` of the stage of type `placed` (placements land there).
    pub(super) placed_stage: usize,
    pub(super) job_status_ids: Vec<Uuid>,
    pub(super) companies: Vec<CompanyRec>,
    pub(super) contacts: Vec<ContactRec>,
    pub(super) jobs: Vec<JobRec>,
}

pub(super) fn ascii_fold(s: &str, out: &mut String) {
    for c in s.chars() {
        let c = match c {
            'á' | 'à' | 'â' | 'ä' | 'å' | 'ã' => 'a',
            'é' | 'è' | 'ê' | 'ë' => 'e',
            'í' | 'ì' | 'î' | 'ï' => 'i',
            'ó' | 'ò' | 'ô' | 'ö' | 'ø' | 'õ' => 'o',
            'ú' | 'ù' | 'û' | 'ü' => 'u',
            'ñ' => 'n',
            'ç' => 'c',
            c => c.to_ascii_lowercase(),
        };
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
            out.push(c);
        }
    }
}

/// Lower-case ASCII words joined by `-`, for storage paths and URLs.
pub(super) fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    for part in s.split(|c: char| !c.is_alphanumeric() && c != '\'') {
        word.clear();
        ascii_fold(part, &mut word);
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word);
    }
    out
}

impl World {
    pub(super) fn build(seed: u64, people: usize) -> World {
        let mut rng = stream(seed, Family::World, 0);
        let workspace_id = uuid(&mut rng);
        let workspace_name = pick(&mut rng, AGENCY_NAMES);
        let slug = slug(workspace_name);
        let mut world = World {
            seed,
            people,
            workspace_id,
            workspace_name,
            slug,
            users: Vec::new(),
            active: Vec::new(),
            invited: Vec::new(),
            removed: Vec::new(),
            stages: Vec::new(),
            placed_stage: 0,
            job_status_ids: Vec::new(),
            companies: Vec::new(),
            contacts: Vec::new(),
            jobs: Vec::new(),
        };
        world.build_users(&mut rng);
        world.build_stages(&mut rng);
        world.job_status_ids = JOB_STATUSES.iter().map(|_| uuid(&mut rng)).collect();
        world.build_companies(&mut rng);
        world.build_jobs(&mut rng);
        world
    }

    pub(super) fn build_users(&mut self, rng: &mut ChaCha8Rng) {
        let count = (self.people / 50).clamp(5, 200);
        let domain = format!("{}.co.uk", self.slug);
        let mut taken: HashMap<String, u32> = HashMap::new();
        for i in 0..count {
            let first = pick(rng, FIRST_NAMES);
            let last = pick(rng, LAST_NAMES);
            let mut local = String::new();
            ascii_fold(first, &mut local);
            local.push('.');
            ascii_fold(last, &mut local);
            let n = taken.entry(local.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                let _ = write!(local, "{n}");
            }
            // The owner is first and active; the last two slots are forced to the rarer
            // statuses so even a tiny workspace has one of each.
            let status = if i == 0 {
                UserStatus::Active
            } else if i == count - 1 {
                UserStatus::Removed
            } else if i == count - 2 {
                UserStatus::Invited
            } else {
                match weighted(rng, &[82, 9, 9]) {
                    0 => UserStatus::Active,
                    1 => UserStatus::Invited,
                    _ => UserStatus::Removed,
                }
            };
            let role = if i == 0 {
                "owner"
            } else {
                pick(rng, USER_ROLES)
            };
            let (created, updated) = match status {
                UserStatus::Active => {
                    let c = between(rng, START, END - 30 * DAY);
                    (c, updated(rng, c, 0.6))
                }
                // Never accepted, so never changed.
                UserStatus::Invited => {
                    let c = between(rng, TRACK, END - DAY);
                    (c, c)
                }
                UserStatus::Removed => {
                    let c = between(rng, START, TRACK - 30 * DAY);
                    (c, between(rng, TRACK, END - DAY))
                }
            };
            let idx = self.users.len();
            match status {
                UserStatus::Active => self.active.push(idx),
                UserStatus::Invited => self.invited.push(idx),
                UserStatus::Removed => self.removed.push(idx),
            }
            self.users.push(UserRec {
                id: uuid(rng),
                name: format!("{first} {last}"),
                email: format!("{local}@{domain}"),
                role,
                status,
                created,
                updated,
            });
        }
    }

    pub(super) fn build_stages(&mut self, rng: &mut ChaCha8Rng) {
        // 5 mandatory stages plus 0–2 of the optional ones, in pipeline order.
        let optional: Vec<usize> = (0..STAGE_TEMPLATE.len())
            .filter(|i| !STAGE_TEMPLATE[*i].2)
            .collect();
        let keep = rng.gen_range(0..=2usize);
        let mut chosen = optional.clone();
        while chosen.len() > keep {
            chosen.remove(rng.gen_range(0..chosen.len()));
        }
        for (i, (name, stage_type, always)) in STAGE_TEMPLATE.iter().enumerate() {
            if *always || chosen.contains(&i) {
                if *stage_type == "placed" {
                    self.placed_stage = self.stages.len();
                }
                self.stages.push(StageRec {
                    id: uuid(rng),
                    name,
                    stage_type,
                });
            }
        }
    }

    pub(super) fn build_companies(&mut self, rng: &mut ChaCha8Rng) {
        let count = (self.people / 20).max(3);
        let mut names: HashMap<String, u32> = HashMap::new();
        for _ in 0..count {
            let name = format!("{} {}", pick(rng, COMPANY_STEMS), pick(rng, COMPANY_KINDS));
            // Several clients may share a trading name; their web domains may not.
            let seen = names.entry(name.clone()).or_insert(0);
            *seen += 1;
            let tld = pick(rng, &[".co.uk", ".co.uk", ".com", ".uk", ".io"]);
            let domain = if *seen == 1 {
                format!("{}{tld}", slug(&name))
            } else {
                format!("{}-{}{tld}", slug(&name), seen)
            };
            let switchboard = (!rng.gen_bool(0.04)).then(|| {
                let kind = match weighted(rng, &[45, 38, 8, 5, 4]) {
                    0 => NumKind::London,
                    1 => NumKind::UkCity,
                    2 => NumKind::Us,
                    3 => NumKind::Fr,
                    _ => NumKind::UkMobile,
                };
                let num = PhoneNum::random(rng, kind);
                Typed::new(rng, num, 0.02)
            });
            let created = between(rng, START, END - 30 * DAY);
            let company = self.companies.len();
            self.companies.push(CompanyRec {
                id: uuid(rng),
                name,
                domain,
                switchboard,
                status: pick(rng, COMPANY_STATUSES),
                archived: rng.gen_bool(0.1),
                owner: if rng.gen_bool(0.8) {
                    Some(self.pick_owner_user(rng))
                } else {
                    None
                },
                linkedin: rng.gen_bool(0.6),
                created,
                updated: updated(rng, created, 0.4),
            });
            self.build_contacts(rng, company);
        }
    }

    pub(super) fn build_contacts(&mut self, rng: &mut ChaCha8Rng, company: usize) {
        let n = 1 + weighted(rng, &[40, 35, 25]);
        let main = rng.gen_range(0..n);
        let first_contact = self.contacts.len();
        let mut bases: Vec<String> = Vec::new();
        for k in 0..n {
            let first = pick(rng, FIRST_NAMES);
            let last = pick(rng, LAST_NAMES);
            let co = &self.companies[company];
            let mut local = String::new();
            ascii_fold(first, &mut local);
            local.push('.');
            ascii_fold(last, &mut local);
            // Names hold no digits, so a numbered local part cannot meet a plain one.
            let dup = bases.iter().filter(|b| **b == local).count();
            bases.push(local.clone());
            if dup > 0 {
                let _ = write!(local, "{}", dup + 1);
            }
            let email = (!rng.gen_bool(0.05)).then(|| format!("{local}@{}", co.domain));
            // Direct lines, the switchboard (often with an extension) or a colleague's
            // line: the shared numbers phone search has to cope with.
            let phone = match weighted(rng, &[81, 10, 4, 5]) {
                1 if co.switchboard.is_some() => {
                    let sb = co.switchboard.expect("checked");
                    Some(Typed::new(rng, sb.num, 0.5))
                }
                2 if k > 0 => self.contacts[first_contact + k - 1]
                    .phone
                    .map(|p| Typed::new(rng, p.num, 0.0)),
                3 => None,
                _ => {
                    let kind = match weighted(rng, &[40, 25, 30, 3, 2]) {
                        0 => NumKind::London,
                        1 => NumKind::UkCity,
                        2 => NumKind::UkMobile,
                        3 => NumKind::Us,
                        _ => NumKind::Fr,
                    };
                    let num = PhoneNum::random(rng, kind);
                    Some(Typed::new(rng, num, 0.03))
                }
            };
            let mobile = rng.gen_bool(0.5).then(|| {
                let num = PhoneNum::random(rng, NumKind::UkMobile);
                Typed::new(rng, num, 0.0)
            });
            let co_created = co.created;
            let created = between(rng, co_created, END - 7 * DAY);
            let linkedin = rng.gen_bool(0.4).then(|| {
                format!(
                    "https://www.linkedin.com/in/{}-{:x}",
                    slug(&format!("{first} {last}")),
                    rng.gen::<u32>() >> 8
                )
            });
            let owner = if rng.gen_bool(0.75) {
                Some(self.pick_owner_user(rng))
            } else {
                None
            };
            self.contacts.push(ContactRec {
                id: uuid(rng),
                company,
                name: format!("{first} {last}"),
                email,
                phone,
                mobile,
                job_title: pick(rng, CONTACT_TITLES),
                department: rng.gen_bool(0.8).then(|| pick(rng, DEPARTMENTS)),
                main: k == main,
                owner,
                linkedin,
                created,
                updated: updated(rng, created, 0.45),
            });
        }
    }

    pub(super) fn build_jobs(&mut self, rng: &mut ChaCha8Rng) {
        let count = (self.people / 10).max(3);
        // Contacts are stored company by company; remember where each company's start.
        let mut first_contact = vec![0usize; self.companies.len() + 1];
        for (i, c) in self.contacts.iter().enumerate().rev() {
            first_contact[c.company] = i;
        }
        first_contact[self.companies.len()] = self.contacts.len();
        for _ in 0..count {
            let title = pick(rng, JOB_TITLES);
            let position = match rng.gen_range(0..10) {
                0 => format!("{title} (Contract)"),
                1 => format!("Senior {title}"),
                _ => title.to_string(),
            };
            let company = if rng.gen_bool(0.87) {
                Some(rng.gen_range(0..self.companies.len()))
            } else {
                None
            };
            let status = weighted(rng, JOB_STATUS_WEIGHTS);
            let archived = match JOB_STATUSES[status] {
                "filled" | "closed" => rng.gen_bool(0.7),
                _ => rng.gen_bool(0.03),
            };
            let salary = match weighted(rng, &[75, 20, 5]) {
                0 => (rng.gen_range(22..140u32) * 1000, "annual"),
                1 => (rng.gen_range(25..95u32) * 10, "daily"),
                _ => (rng.gen_range(12..60u32), "hourly"),
            };
            let currency = pick(rng, &["GBP", "GBP", "GBP", "GBP", "GBP", "EUR", "USD"]);
            let assigned = match weighted(rng, &[80, 5, 15]) {
                0 => Some(self.pick_active(rng)),
                1 => Some(self.pick_removed_or_active(rng)),
                _ => None,
            };
            let created_by = if rng.gen_bool(0.9) {
                self.pick_active(rng)
            } else {
                self.pick_removed_or_active(rng)
            };
            let hiring_manager = company.and_then(|c| {
                let (lo, hi) = (first_contact[c], first_contact[c + 1]);
                (hi > lo && rng.gen_bool(0.6)).then(|| rng.gen_range(lo..hi))
            });
            let created = between(rng, START, END - 14 * DAY);
            self.jobs.push(JobRec {
                id: uuid(rng),
                title,
                position,
                company,
                status,
                archived,
                careers: !archived && rng.gen_bool(0.45),
                salary: (salary.0, currency, salary.1),
                assigned,
                created_by,
                hiring_manager,
                created,
                updated: updated(rng, created, 0.3),
            });
        }
    }

    pub(super) fn pick_active(&self, rng: &mut ChaCha8Rng) -> usize {
        pick(rng, &self.active)
    }

    pub(super) fn pick_removed_or_active(&self, rng: &mut ChaCha8Rng) -> usize {
        if self.removed.is_empty() {
            self.pick_active(rng)
        } else {
            pick(rng, &self.removed)
        }
    }

    /// An owner as recorded on a company or contact: mostly a current member.
    pub(super) fn pick_owner_user(&self, rng: &mut ChaCha8Rng) -> usize {
        match weighted(rng, &[90, 7, 3]) {
            0 => self.pick_active(rng),
            1 => self.pick_removed_or_active(rng),
            _ if !self.invited.is_empty() => pick(rng, &self.invited),
            _ => self.pick_active(rng),
        }
    }

    /// Author of a note: members, now and then one who has since left.
    pub(super) fn pick_author(&self, rng: &mut ChaCha8Rng) -> usize {
        if rng.gen_bool(0.06) {
            self.pick_removed_or_active(rng)
        } else {
            self.pick_active(rng)
        }
    }

    pub(super) fn user_id(&self, idx: usize) -> Uuid {
        self.users[idx].id
    }

    pub(super) fn write_org<W: Write>(&self, json: &mut JsonOut<W>) -> io::Result<()> {
        json.begin("users")?;
        for u in &self.users {
            json.item(&self.user_record(u))?;
        }
        json.end()?;
        json.begin("pipeline_stages")?;
        for s in &self.stages {
            json.item(&self.stage_record(s))?;
        }
        json.end()?;
        json.begin("companies")?;
        for c in &self.companies {
            json.item(&self.company_record(c))?;
        }
        json.end()?;
        json.begin("contacts")?;
        for c in &self.contacts {
            json.item(&self.contact_record(c))?;
        }
        json.end()?;
        json.begin("jobs")?;
        for j in &self.jobs {
            json.item(&self.job_record(j))?;
        }
        json.end()
    }
}
