//! Pipeline stages: the steps of a job's pipeline. The API lists no stages; it shows a
//! candidate row's stage (name and type) inside the row.

use crate::packed::rec::{accessors, id_bytes, Rec};
use crate::packed::Writer;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineStage {
    pub id: Uuid,
    pub name: Option<String>,
    pub stage_type: Option<String>,
}

/// Where each field sits in the packed layout: its class (ids, words, bytes, flags,
/// texts) and its index within it.
pub(crate) mod layout {
    pub const ID: u8 = 0;
    pub const NAME: u8 = 0;
    pub const STAGE_TYPE: u8 = 1;
}

impl Rec<PipelineStage> {
    pub fn pack(s: &PipelineStage) -> Arc<Self> {
        use layout::*;
        let mut w = Writer::default();
        w.id(ID, id_bytes(Some(s.id)))
            .text(NAME, s.name.as_deref())
            .text(STAGE_TYPE, s.stage_type.as_deref());
        Rec::new(w.finish())
    }

    pub fn raw(&self) -> PipelineStage {
        use layout::*;
        let t = self.text_fields();
        PipelineStage {
            id: self.id(),
            name: t.string(NAME),
            stage_type: t.string(STAGE_TYPE),
        }
    }
}

accessors!(PipelineStage {
    id: uuid(layout::ID) -> Uuid;
    name: text(layout::NAME) -> Option<&str>;
    stage_type: text(layout::STAGE_TYPE) -> Option<&str>;
});
