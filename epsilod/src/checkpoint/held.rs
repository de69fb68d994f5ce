//! What a directory holds of one run's checkpoints, as a restart from it
//! would see them: the words of the errors that refuse to write beside
//! them. A leaf: the errors name it, and the owner check fills it.

/// One run's complete checkpoints in a directory, as a restart from it
/// would see them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    /// The newest one's iteration (of those whose manifest is whole).
    pub newest: u64,
    /// The newest one whose blocks are whole too, which `--restart` would
    /// take; none where every one is damaged.
    pub usable: Option<u64>,
}

impl Held {
    /// Their newest, and which is usable where that one is damaged: a
    /// restart skips damaged ones for an older one.
    pub(super) fn text(&self) -> String {
        match self.usable {
            Some(u) if u == self.newest => format!("the newest at iteration {u}"),
            Some(u) => format!(
                "the newest usable at iteration {u} (the newest, at {}, is damaged)",
                self.newest
            ),
            None => format!("all damaged, the newest at iteration {}", self.newest),
        }
    }
}

/// What a directory holds of this run and of another one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldByBoth {
    /// This run's checkpoints.
    pub own: Held,
    /// The other run's (or runs').
    pub other: Held,
}
