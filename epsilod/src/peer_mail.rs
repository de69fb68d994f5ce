//! Halos that stay in device memory between the virtual processes of one
//! process whose devices share it (`controllers::peer`: virtual devices on
//! one GPU, devices of one OpenCL context). The cells go through this
//! mailbox as device buffers; the transport carries an empty message in
//! their place, so the order of messages, the waiting and the news of a
//! failed peer stay the transport's.

use controllers::{DeviceMessage, PeerDomain};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// The mailbox of one run's virtual processes in this process.
pub(crate) struct PeerMail {
    /// Every halo goes through the host (`RunOptions::host_halos`): nothing
    /// shares.
    off: bool,
    /// Each local virtual process's domain, once its device is open.
    domains: Mutex<Vec<Option<PeerDomain>>>,
    /// Messages by (from, to, tag), in the order sent.
    boxes: Mutex<HashMap<(usize, usize, u64), VecDeque<DeviceMessage>>>,
}

impl PeerMail {
    /// A mailbox for a run of `procs` virtual processes; with `off`, one
    /// that never shares.
    pub(crate) fn new(procs: usize, off: bool) -> PeerMail {
        if off {
            tracing::info!("host halos: every halo goes through the host");
        }
        PeerMail {
            off,
            domains: Mutex::new(vec![None; procs]),
            boxes: Mutex::new(HashMap::new()),
        }
    }

    /// Virtual process `p` is here, on a device of `domain`.
    pub(crate) fn register(&self, p: usize, domain: Option<PeerDomain>) {
        if let Some(slot) = lock(&self.domains).get_mut(p) {
            *slot = domain;
        }
    }

    /// Whether `p` and `q` are both here on devices that share memory.
    /// Both register before the run's first barrier, and exchanges come
    /// after it.
    pub(crate) fn shared(&self, p: usize, q: usize) -> bool {
        if self.off {
            return false;
        }
        let d = lock(&self.domains);
        matches!((d.get(p), d.get(q)), (Some(Some(a)), Some(Some(b))) if a == b)
    }

    /// Leaves `msg` from `from` to `to` under `tag`.
    pub(crate) fn post(&self, from: usize, to: usize, tag: u64, msg: DeviceMessage) {
        lock(&self.boxes)
            .entry((from, to, tag))
            .or_default()
            .push_back(msg);
    }

    /// The oldest message from `from` to `to` under `tag`.
    pub(crate) fn take(&self, from: usize, to: usize, tag: u64) -> Option<DeviceMessage> {
        let mut boxes = lock(&self.boxes);
        let queue = boxes.get_mut(&(from, to, tag))?;
        let msg = queue.pop_front();
        if queue.is_empty() {
            boxes.remove(&(from, to, tag));
        }
        msg
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain(id: u64) -> Option<PeerDomain> {
        Some(PeerDomain {
            api: "test",
            id,
            cells: kernels::CellLayout::Cells,
        })
    }

    #[test]
    fn only_processes_here_on_one_domain_share() {
        let mail = PeerMail::new(4, false);
        mail.register(0, domain(1));
        mail.register(1, domain(1));
        mail.register(2, domain(2));
        mail.register(3, None);
        assert!(mail.shared(0, 1) && mail.shared(1, 0));
        assert!(!mail.shared(0, 2), "other domains");
        assert!(!mail.shared(3, 3), "no domain");
        assert!(!mail.shared(0, 9), "not here");
    }

    #[test]
    fn a_mailbox_for_host_halos_never_shares() {
        let mail = PeerMail::new(2, true);
        mail.register(0, domain(1));
        mail.register(1, domain(1));
        assert!(!mail.shared(0, 1));
    }
}
