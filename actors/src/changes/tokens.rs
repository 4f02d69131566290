//! Feed tokens: the point in a workspace's change log a `GET /v1/changes` answer stopped
//! at, signed and bound to the workspace, so a client can only hand back a point it was
//! given.

use crate::query::CursorKey;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use uuid::Uuid;

/// A point in a workspace's change log, as a feed token carries it: after `index`
/// entries of part `part` at commit position `position` ([`WHOLE_PART`]: after all of
/// that part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeedPoint {
    pub position: u64,
    pub part: u32,
    pub index: u32,
}

/// `FeedPoint::index` of a part read to its end.
pub const WHOLE_PART: u32 = u32::MAX;

impl FeedPoint {
    /// After everything up to `position` included: where a state at `position` stands.
    pub fn at(position: u64) -> FeedPoint {
        FeedPoint {
            position,
            part: u32::MAX,
            index: WHOLE_PART,
        }
    }

    /// Whether some of position `position`'s parts may remain to read from here: the
    /// point is inside that position, not after all of it.
    pub(crate) fn inside(self) -> bool {
        self.part != u32::MAX || self.index != WHOLE_PART
    }

    /// The exclusive lower bound of the parts still to read from here: this part when
    /// some of its entries remain, else the ones after it.
    pub(crate) fn read_after(self) -> (u64, u32) {
        if self.index == WHOLE_PART {
            (self.position, self.part)
        } else if self.part > 0 {
            (self.position, self.part - 1)
        } else {
            (self.position.saturating_sub(1), u32::MAX)
        }
    }
}

const TOKEN_DOMAIN: &[u8] = b"recruitd-changes-v2";
const TOKEN_VERSION: u8 = 2;

/// Why a `since` token is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// Not a token this server issued, or altered.
    Invalid,
    /// Issued for another workspace.
    OtherWorkspace,
}

/// The opaque, signed form of a point of `workspace`'s log.
pub fn encode_token(key: &CursorKey, workspace: Uuid, point: FeedPoint) -> String {
    let mut p = Vec::with_capacity(16 + 1 + 16 + 8 + 4 + 4);
    p.push(TOKEN_VERSION);
    p.extend_from_slice(workspace.as_bytes());
    p.extend_from_slice(&point.position.to_be_bytes());
    p.extend_from_slice(&point.part.to_be_bytes());
    p.extend_from_slice(&point.index.to_be_bytes());
    let seal = key.seal(TOKEN_DOMAIN, &p);
    p.extend_from_slice(&seal);
    URL_SAFE_NO_PAD.encode(p)
}

/// The point a token names, checked: signed by `key`, for `workspace`.
pub fn decode_token(key: &CursorKey, workspace: Uuid, raw: &str) -> Result<FeedPoint, TokenError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(raw.as_bytes())
        .map_err(|_| TokenError::Invalid)?;
    if bytes.len() != 1 + 16 + 8 + 4 + 4 + crate::signing::SEAL_LEN {
        return Err(TokenError::Invalid);
    }
    let (payload, seal) = bytes.split_at(bytes.len() - crate::signing::SEAL_LEN);
    if !key.check(TOKEN_DOMAIN, payload, seal) || payload[0] != TOKEN_VERSION {
        return Err(TokenError::Invalid);
    }
    let ws = Uuid::from_slice(&payload[1..17]).map_err(|_| TokenError::Invalid)?;
    if ws != workspace {
        return Err(TokenError::OtherWorkspace);
    }
    let num = |at: usize, n: usize| {
        payload[at..at + n]
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
    };
    Ok(FeedPoint {
        position: num(17, 8),
        part: num(25, 4) as u32,
        index: num(29, 4) as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Entity;
    use crate::time::Stamp;

    #[test]
    fn tokens_are_signed_and_name_their_workspace() {
        let key = CursorKey::new([7; 32]);
        let ws = Uuid::new_v4();
        let point = FeedPoint {
            position: 42,
            part: 3,
            index: 17,
        };
        let token = encode_token(&key, ws, point);
        assert_eq!(decode_token(&key, ws, &token), Ok(point));
        assert_eq!(
            decode_token(&key, Uuid::new_v4(), &token),
            Err(TokenError::OtherWorkspace)
        );
        assert_eq!(
            decode_token(&CursorKey::new([8; 32]), ws, &token),
            Err(TokenError::Invalid)
        );
        let mut bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        bytes[20] ^= 1;
        let altered = URL_SAFE_NO_PAD.encode(&bytes);
        assert_eq!(decode_token(&key, ws, &altered), Err(TokenError::Invalid));
        assert_eq!(decode_token(&key, ws, "x"), Err(TokenError::Invalid));
        // A list cursor signed with the same key is not a feed token.
        let cursor = crate::query::Cursor {
            entity: Entity::Notes,
            since: None,
            last_stamp: Stamp::from_millis(0),
            last_id: crate::query::CursorId::Uuid(ws),
        }
        .encode(&key);
        assert_eq!(decode_token(&key, ws, &cursor), Err(TokenError::Invalid));
    }
}
