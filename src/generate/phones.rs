//! Phone numbers as people type them: UK mobiles and landlines, US and French numbers,
//! in many national and international formats, some shared between people.

use super::*;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum NumKind {
    UkMobile,
    London,
    UkCity,
    Us,
    Fr,
}

/// A phone number as a fact (its national significant number); how it is typed is
/// chosen separately by whoever enters it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct PhoneNum {
    pub(super) kind: NumKind,
    pub(super) nsn: u64,
}

/// Ways people type numbers: `#` takes the next digit of the national significant
/// number. Including formats that do not follow the national grouping is deliberate.
pub(super) const UK_MOBILE_STYLES: &[&str] = &[
    "0#### ######",
    "0##########",
    "+44 #### ######",
    "0#### ### ###",
    "(0)####-### ###",
    "+44##########",
    "+44 (0)#### ######",
    "0044 #### ######",
    "0####-###-###",
    "0#### ######",
];
pub(super) const LONDON_STYLES: &[&str] = &[
    "0## #### ####",
    "+44 (0)## #### ####",
    "0##########",
    "+44 ## #### ####",
    "(0##) #### ####",
    "0### ### ####",
    "+44##########",
];
pub(super) const CITY_STYLES: &[&str] = &[
    "0### ### ####",
    "+44 ### ### ####",
    "(0###) #######",
    "0##########",
    "+44 (0)### ### ####",
];
pub(super) const US_STYLES: &[&str] = &[
    "+1 (###) ###-####",
    "+1 ###.###.####",
    "+1 ###-###-####",
    "001 ### ### ####",
    "+1##########",
];
pub(super) const FR_STYLES: &[&str] = &[
    "+33 # ## ## ## ##",
    "+33 (0)# ## ## ## ##",
    "0033 #########",
    "+33#########",
];
pub(super) const EXTENSION_STYLES: &[&str] = &[" ext. ", " x", "#", " ext ", " Ext. "];

/// UK geographic area codes (without trunk 0) of large cities.
pub(super) const UK_CITY_AREAS: &[u64] =
    &[161, 121, 113, 141, 131, 117, 151, 114, 191, 115, 116, 118];
/// Area codes for North American numbers.
pub(super) const US_AREAS: &[u64] = &[415, 212, 646, 617, 312, 206, 512, 303, 213, 718];
/// UK mobile prefixes (after the 7) in allocated, valid ranges.
pub(super) const UK_MOBILE_PREFIXES: &[u64] =
    &[71, 72, 73, 77, 78, 79, 740, 741, 742, 743, 744, 746, 747];

impl PhoneNum {
    pub(super) fn random(rng: &mut ChaCha8Rng, kind: NumKind) -> PhoneNum {
        let nsn = match kind {
            NumKind::UkMobile => {
                // 07 followed by nine digits; keep to ranges the numbering plan
                // allocates, so the numbers validate like real ones.
                let p = pick(rng, UK_MOBILE_PREFIXES);
                if p >= 100 {
                    p * 10_000_000 + rng.gen_range(0..10_000_000)
                } else {
                    p * 100_000_000 + rng.gen_range(0..100_000_000)
                }
            }
            // 020 3xxx, 020 7xxx, 020 8xxx
            NumKind::London => {
                20_0000_0000
                    + [3u64, 7, 8][rng.gen_range(0..3)] * 1000_0000
                    + rng.gen_range(0..1000_0000)
            }
            NumKind::UkCity => {
                pick(rng, UK_CITY_AREAS) * 10_000_000 + rng.gen_range(2_000_000..10_000_000)
            }
            NumKind::Us => {
                let exchange = loop {
                    let e = rng.gen_range(200..1000u64);
                    if e % 100 != 11 {
                        break e;
                    }
                };
                pick(rng, US_AREAS) * 10_000_000 + exchange * 10_000 + rng.gen_range(0..10_000)
            }
            NumKind::Fr => 600_000_000 + rng.gen_range(0..100_000_000),
        };
        PhoneNum { kind, nsn }
    }

    pub(super) fn styles(self) -> &'static [&'static str] {
        match self.kind {
            NumKind::UkMobile => UK_MOBILE_STYLES,
            NumKind::London => LONDON_STYLES,
            NumKind::UkCity => CITY_STYLES,
            NumKind::Us => US_STYLES,
            NumKind::Fr => FR_STYLES,
        }
    }

    /// The number typed in style `style` (taken modulo the kind's style count), with an
    /// optional extension.
    pub(super) fn format(self, style: u8, ext: Option<(u8, u16)>) -> String {
        let styles = self.styles();
        let template = styles[style as usize % styles.len()];
        let digits = self.nsn.to_string();
        let mut it = digits.bytes();
        let mut out = String::with_capacity(template.len() + 10);
        for c in template.chars() {
            if c == '#' {
                out.push(it.next().map_or('0', char::from));
            } else {
                out.push(c);
            }
        }
        debug_assert!(it.next().is_none(), "template {template} too short");
        if let Some((ext_style, n)) = ext {
            out.push_str(EXTENSION_STYLES[ext_style as usize % EXTENSION_STYLES.len()]);
            let _ = write!(out, "{n}");
        }
        out
    }
}

/// How a holder types numbers: one style index and maybe an extension.
#[derive(Clone, Copy)]
pub(super) struct Typed {
    pub(super) num: PhoneNum,
    pub(super) style: u8,
    pub(super) ext: Option<(u8, u16)>,
}

impl Typed {
    pub(super) fn new(rng: &mut ChaCha8Rng, num: PhoneNum, ext_chance: f64) -> Typed {
        let ext = rng.gen_bool(ext_chance).then(|| {
            (
                rng.gen_range(0..EXTENSION_STYLES.len() as u8),
                rng.gen_range(2..500u16),
            )
        });
        Typed {
            num,
            style: rng.gen(),
            ext,
        }
    }

    pub(super) fn render(self) -> String {
        self.num.format(self.style, self.ext)
    }
}

pub(super) fn random_personal_number(rng: &mut ChaCha8Rng) -> PhoneNum {
    let kind = match weighted(rng, &[74, 9, 8, 5, 4]) {
        0 => NumKind::UkMobile,
        1 => NumKind::London,
        2 => NumKind::UkCity,
        3 => NumKind::Us,
        _ => NumKind::Fr,
    };
    PhoneNum::random(rng, kind)
}

/// Where a person's numbers come from; sharing is what makes phone search interesting.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Share {
    Own,
    /// Typed another candidate's number as their phone (household, shared line).
    PhoneOfPerson(usize),
    /// Their mobile is another candidate's phone.
    MobileIsPhoneOfPerson(usize),
    /// Also a client contact: typed that contact's number.
    PhoneOfContact(usize),
}

/// A person's numbers before sharing is resolved. Cheap to draw, so a donor's numbers
/// are re-derived on demand rather than remembered.
pub(super) struct PhoneDraw {
    pub(super) share: Share,
    pub(super) phone: Option<Typed>,
    pub(super) mobile: Option<Typed>,
}

/// The phone and mobile a candidate person carries, as typed.
pub(super) struct Phones {
    pub(super) phone: Option<String>,
    pub(super) mobile: Option<String>,
}
