//! People: each person's candidate rows, drawn from the person's own streams so that
//! later passes can regenerate them instead of remembering them.

use super::*;

pub(super) struct Row {
    pub(super) id: Uuid,
    pub(super) job: Option<usize>,
    pub(super) stage: Option<usize>,
    pub(super) outcome: Option<Outcome>,
    pub(super) rejected_at: Option<i64>,
    pub(super) owner: Option<usize>,
    pub(super) created: i64,
    pub(super) updated: i64,
}

/// One candidate person, regenerated from its stream whenever needed.
pub(super) struct Person {
    pub(super) index: usize,
    pub(super) id: Uuid,
    pub(super) first: &'static str,
    pub(super) last: &'static str,
    pub(super) name: String,
    pub(super) email_format: u8,
    pub(super) email_domain: usize,
    pub(super) has_email: bool,
    pub(super) job_title: Option<&'static str>,
    pub(super) company: Option<&'static str>,
    pub(super) location: Option<&'static str>,
    pub(super) linkedin: Option<String>,
    pub(super) salary: CandidateSalary,
    pub(super) consent: Consent,
    /// `rows[0]` is the primary row.
    pub(super) rows: Vec<Row>,
}

pub(super) fn salary_text(
    rng: &mut ChaCha8Rng,
    amount: u32,
    currency: &str,
    daily: bool,
) -> String {
    let sym = match currency {
        "EUR" => "€",
        "USD" => "$",
        _ => "£",
    };
    if daily {
        return match rng.gen_range(0..3) {
            0 => format!("{sym}{amount}/day"),
            1 => format!("{amount} per day"),
            _ => format!("{sym}{amount} p/d outside IR35"),
        };
    }
    let k = amount / 1000;
    match rng.gen_range(0..6) {
        0 => format!("{k}k"),
        1 => format!("{k}k + bonus"),
        2 => format!("{sym}{k},000"),
        3 => format!("{sym}{k}k plus benefits"),
        4 => format!("{}-{}k", k, k + 5),
        _ => "negotiable".to_string(),
    }
}

impl World {
    pub(super) fn person(&self, index: usize) -> Person {
        let mut rng = stream(self.seed, Family::Person, index as u64);
        let rng = &mut rng;
        let id = uuid(rng);
        let first = pick(rng, FIRST_NAMES);
        let last = pick(rng, LAST_NAMES);
        let name = match rng.gen_range(0..40) {
            0 => format!("{} {}", first.to_uppercase(), last),
            1 => format!("{first}  {last}"),
            _ => format!("{first} {last}"),
        };
        let email_format = rng.gen_range(0..6u8);
        let email_domain = weighted(rng, MAIL_DOMAIN_WEIGHTS);
        let has_email = !rng.gen_bool(0.04);
        let job_title = (!rng.gen_bool(0.05)).then(|| pick(rng, JOB_TITLES));
        let company = (!rng.gen_bool(0.15)).then(|| pick(rng, EMPLOYERS));
        let location = (!rng.gen_bool(0.08)).then(|| pick(rng, LOCATIONS));
        let linkedin = rng.gen_bool(0.45).then(|| {
            let mut s = String::from("https://www.linkedin.com/in/");
            ascii_fold(first, &mut s);
            s.push('-');
            ascii_fold(last, &mut s);
            let _ = write!(s, "-{:x}", rng.gen::<u32>() >> 4);
            s
        });

        let currency = pick(
            rng,
            &["GBP", "GBP", "GBP", "GBP", "GBP", "GBP", "EUR", "USD"],
        );
        let salary = if rng.gen_bool(0.2) {
            CandidateSalary {
                current_amount: None,
                current_currency: None,
                current_text: None,
                expected_amount: None,
                expected_currency: None,
                expected_text: None,
            }
        } else if rng.gen_bool(0.1) {
            let day = rng.gen_range(25..95u32) * 10;
            let exp = day + rng.gen_range(0..10u32) * 25;
            CandidateSalary {
                current_amount: Some(day.into()),
                current_currency: Some(currency.into()),
                current_text: Some(salary_text(rng, day, currency, true)),
                expected_amount: Some(exp.into()),
                expected_currency: Some(currency.into()),
                expected_text: Some(salary_text(rng, exp, currency, true)),
            }
        } else {
            let cur = rng.gen_range(20..150u32) * 1000;
            let exp = (cur as f64 * rng.gen_range(1.0..1.3) / 1000.0).round() as u32 * 1000;
            let texts = rng.gen_bool(0.7);
            CandidateSalary {
                current_amount: Some(cur.into()),
                current_currency: Some(currency.into()),
                current_text: texts.then(|| salary_text(rng, cur, currency, false)),
                expected_amount: rng.gen_bool(0.85).then_some(exp.into()),
                expected_currency: Some(currency.into()),
                expected_text: texts.then(|| salary_text(rng, exp, currency, false)),
            }
        };

        let created = between(rng, START, END - DAY);
        let consent = match weighted(rng, &[45, 20, 25, 5, 5]) {
            0 => {
                let req = between(rng, created, created + 10 * DAY).min(END - 1);
                let given = between(rng, req, req + 5 * DAY).min(END - 1);
                Consent {
                    status: Some("given".into()),
                    given_at: Some(stamp(given)),
                    requested_at: Some(stamp(req)),
                    expires_at: rng.gen_bool(0.6).then(|| stamp(given + 730 * DAY)),
                }
            }
            1 => Consent {
                status: Some("requested".into()),
                given_at: None,
                requested_at: Some(stamp(between(rng, created, END - 1))),
                expires_at: None,
            },
            2 => Consent {
                status: Some("not_requested".into()),
                given_at: None,
                requested_at: None,
                expires_at: None,
            },
            3 => Consent {
                status: Some("withdrawn".into()),
                given_at: Some(stamp(created)),
                requested_at: Some(stamp(created)),
                expires_at: None,
            },
            _ => Consent {
                status: None,
                given_at: None,
                requested_at: None,
                expires_at: None,
            },
        };

        let owner = self.pick_candidate_owner(rng);
        let mut rows = Vec::with_capacity(6);
        rows.push(Row {
            id: uuid(rng),
            job: None,
            stage: None,
            outcome: None,
            rejected_at: None,
            owner,
            created,
            updated: updated(rng, created, 0.45),
        });

        let job_rows = weighted(rng, &[35, 30, 15, 10, 6, 4]).min(self.jobs.len());
        let mut jobs = [usize::MAX; 5];
        for k in 0..job_rows {
            let job = loop {
                let j = rng.gen_range(0..self.jobs.len());
                if !jobs[..k].contains(&j) {
                    break j;
                }
            };
            jobs[k] = job;
            let jr = &self.jobs[job];
            let lo = created.max(jr.created);
            let row_created = between(rng, lo, (lo + 90 * DAY).min(END - 1));
            // Early stages are the crowded ones.
            let mut stage = weighted(rng, &[30, 24, 18, 12, 8, 5, 3]) % self.stages.len();
            let (outcome, rejected_at, row_updated) = if stage == self.placed_stage {
                if rng.gen_bool(0.9) {
                    let at = between(rng, row_created, END);
                    (Some(Outcome::Placed), None, touched(row_created, at))
                } else {
                    (None, None, updated(rng, row_created, 0.3))
                }
            } else if rng.gen_bool(0.25) {
                let at = between(rng, row_created, END);
                (Some(Outcome::Rejected), Some(at), touched(row_created, at))
            } else if rng.gen_bool(0.03) {
                // A few placements recorded without moving the stage along.
                stage = self.placed_stage;
                let at = between(rng, row_created, END);
                (Some(Outcome::Placed), None, touched(row_created, at))
            } else {
                (None, None, updated(rng, row_created, 0.35))
            };
            let row_owner = match rng.gen_range(0..10) {
                0..=4 => owner,
                5..=7 => None,
                _ => self.pick_candidate_owner(rng),
            };
            rows.push(Row {
                id: uuid(rng),
                job: Some(job),
                stage: Some(stage),
                outcome,
                rejected_at,
                owner: row_owner,
                created: row_created,
                updated: row_updated,
            });
        }

        Person {
            index,
            id,
            first,
            last,
            name,
            email_format,
            email_domain,
            has_email,
            job_title,
            company,
            location,
            linkedin,
            salary,
            consent,
            rows,
        }
    }

    /// Owner recorded on a candidate row: often nobody, mostly a current member, some
    /// who left or never joined (the API then falls back or shows null).
    pub(super) fn pick_candidate_owner(&self, rng: &mut ChaCha8Rng) -> Option<usize> {
        match weighted(rng, &[25, 63, 8, 4]) {
            0 => None,
            1 => Some(self.pick_active(rng)),
            2 => Some(self.pick_removed_or_active(rng)),
            _ if !self.invited.is_empty() => Some(pick(rng, &self.invited)),
            _ => Some(self.pick_active(rng)),
        }
    }

    pub(super) fn phone_draw(&self, index: usize) -> PhoneDraw {
        let mut rng = stream(self.seed, Family::Phone, index as u64);
        let rng = &mut rng;
        // Each sharing event pairs two people, so ~2% of events here plus the contacts
        // sharing switchboards give ~5% of people holding a number someone else holds.
        let share = match weighted(rng, &[9_810, 70, 90, 30]) {
            1 if index > 0 => Share::PhoneOfPerson(index - 1 - rng.gen_range(0..index.min(20_000))),
            2 if index > 0 => {
                Share::MobileIsPhoneOfPerson(index - 1 - rng.gen_range(0..index.min(20_000)))
            }
            3 if !self.contacts.is_empty() => {
                Share::PhoneOfContact(rng.gen_range(0..self.contacts.len()))
            }
            _ => Share::Own,
        };
        let phone = (!rng.gen_bool(0.03)).then(|| {
            let num = random_personal_number(rng);
            Typed::new(rng, num, 0.005)
        });
        let mobile_chance = match phone.map(|p| p.num.kind) {
            Some(NumKind::UkMobile) => 0.3,
            _ => 0.8,
        };
        let mobile = rng.gen_bool(mobile_chance).then(|| {
            let num = PhoneNum::random(rng, NumKind::UkMobile);
            Typed::new(rng, num, 0.0)
        });
        PhoneDraw {
            share,
            phone,
            mobile,
        }
    }

    /// The phone a donor really carries, if it is its own (a donor that itself borrowed
    /// its phone is skipped, so sharing never chains).
    pub(super) fn donor_phone(&self, donor: usize) -> Option<PhoneNum> {
        let d = self.phone_draw(donor);
        match d.share {
            Share::Own | Share::MobileIsPhoneOfPerson(_) => d.phone.map(|t| t.num),
            _ => None,
        }
    }

    pub(super) fn person_phones(&self, index: usize) -> Phones {
        let mut d = self.phone_draw(index);
        // Re-type a borrowed number in the borrower's own style.
        let retype = |t: Option<Typed>, num: PhoneNum, salt: u8| Typed {
            num,
            style: t.map_or(salt, |t| t.style.wrapping_add(salt)),
            ext: None,
        };
        match d.share {
            Share::Own => {}
            Share::PhoneOfPerson(j) => {
                if let Some(num) = self.donor_phone(j) {
                    d.phone = Some(retype(d.phone, num, 1));
                }
            }
            Share::MobileIsPhoneOfPerson(j) => {
                if let Some(num) = self.donor_phone(j) {
                    d.mobile = Some(retype(d.mobile, num, 2));
                }
            }
            Share::PhoneOfContact(c) => {
                if let Some(t) = self.contacts[c].phone {
                    d.phone = Some(retype(d.phone, t.num, 3));
                }
            }
        }
        Phones {
            phone: d.phone.map(Typed::render),
            mobile: d.mobile.map(Typed::render),
        }
    }
}

/// Hands out unique, lower-case e-mail addresses in person order: the first holder of
/// a local part gets it plain, later ones a number. Memory is bounded by the number of
/// distinct name/format/domain combinations, not by the number of people.
#[derive(Default)]
pub(super) struct EmailBook {
    pub(super) seen: HashMap<String, u32>,
}

impl EmailBook {
    pub(super) fn assign(&mut self, p: &Person) -> Option<String> {
        if !p.has_email {
            return None;
        }
        let mut f = String::new();
        ascii_fold(p.first, &mut f);
        let mut l = String::new();
        ascii_fold(p.last, &mut l);
        let mut base = String::with_capacity(40);
        match p.email_format {
            0 | 1 => {
                let _ = write!(base, "{f}.{l}");
            }
            2 => {
                let _ = write!(base, "{f}{l}");
            }
            3 => {
                let _ = write!(base, "{}{l}", &f[..1]);
            }
            4 => {
                let _ = write!(base, "{f}_{l}");
            }
            _ => {
                let _ = write!(base, "{l}.{f}");
            }
        }
        // Names carry no digits, so "base" + number never collides with another base.
        let domain = MAIL_DOMAINS[p.email_domain];
        base.push('@');
        base.push_str(domain);
        let n = match self.seen.get_mut(&base) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                self.seen.insert(base.clone(), 1);
                1
            }
        };
        base.truncate(base.len() - domain.len() - 1);
        if n > 1 {
            let _ = write!(base, "{n}");
        }
        base.push('@');
        base.push_str(domain);
        Some(base)
    }
}
