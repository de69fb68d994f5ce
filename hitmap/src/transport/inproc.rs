use super::{Transport, TransportError};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Key {
    P2p(u64),
    Values(u64),
    Collective(u64),
}

enum Payload<T> {
    Cells(Vec<T>),
    Floats(Vec<f64>),
}

struct Msg<T> {
    from: usize,
    key: Key,
    payload: Payload<T>,
}

/// One virtual process's endpoint of the in-process transport (threads and
/// channels; messages move by handing over the vector, no copy).
///
/// An endpoint that is dropped marks its process gone, so a peer waiting for
/// it gets `PeerGone` instead of hanging.
pub struct InProcess<T> {
    rank: usize,
    txs: Vec<Sender<Msg<T>>>,
    rx: Receiver<Msg<T>>,
    pending: HashMap<(usize, Key), VecDeque<Payload<T>>>,
    gone: Arc<Vec<AtomicBool>>,
    collectives: u64,
}

/// Endpoints for `n` virtual processes, rank `i` at index `i`.
pub fn in_process<T: Send>(n: usize) -> Vec<InProcess<T>> {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..n).map(|_| channel()).unzip();
    let gone = Arc::new((0..n).map(|_| AtomicBool::new(false)).collect::<Vec<_>>());
    rxs.into_iter()
        .enumerate()
        .map(|(rank, rx)| InProcess {
            rank,
            txs: txs.clone(),
            rx,
            pending: HashMap::new(),
            gone: gone.clone(),
            collectives: 0,
        })
        .collect()
}

const POLL: Duration = Duration::from_millis(20);
const SPIN: Duration = Duration::from_micros(50);

impl<T: Send> InProcess<T> {
    fn post(&self, to: usize, key: Key, payload: Payload<T>) -> Result<(), TransportError> {
        let tx = self.txs.get(to).ok_or(TransportError::NoSuchPeer {
            peer: to,
            size: self.txs.len(),
        })?;
        tx.send(Msg {
            from: self.rank,
            key,
            payload,
        })
        .map_err(|_| TransportError::PeerGone(to))
    }

    fn wait(&mut self, from: usize, key: Key) -> Result<Payload<T>, TransportError> {
        if from >= self.txs.len() {
            return Err(TransportError::NoSuchPeer {
                peer: from,
                size: self.txs.len(),
            });
        }
        let mut spun = Instant::now();
        loop {
            if let Some(p) = self
                .pending
                .get_mut(&(from, key))
                .and_then(VecDeque::pop_front)
            {
                return Ok(p);
            }
            // Poll briefly before blocking: a neighbour's halo usually arrives
            // within microseconds, and waking a blocked thread costs tens of
            // them (measured: 8% of a 0.25 ms iteration).
            if spun.elapsed() < SPIN {
                match self.rx.try_recv() {
                    Ok(m) => {
                        self.stash(m);
                        spun = Instant::now();
                    }
                    Err(_) => std::hint::spin_loop(),
                }
                continue;
            }
            // Read the flag before polling: anything the peer sent before it
            // went is then already in the channel.
            let peer_gone = self.gone[from].load(Ordering::Acquire);
            match self.rx.recv_timeout(POLL) {
                Ok(m) => self.stash(m),
                Err(RecvTimeoutError::Timeout) if peer_gone => {
                    return Err(TransportError::PeerGone(from))
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(TransportError::PeerGone(from)),
            }
        }
    }

    fn stash(&mut self, m: Msg<T>) {
        self.pending
            .entry((m.from, m.key))
            .or_default()
            .push_back(m.payload);
    }
}

impl<T: Send> Transport<T> for InProcess<T> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.txs.len()
    }

    fn send(&mut self, to: usize, tag: u64, data: Vec<T>) -> Result<(), TransportError> {
        self.post(to, Key::P2p(tag), Payload::Cells(data))
    }

    fn recv(&mut self, from: usize, tag: u64) -> Result<Vec<T>, TransportError> {
        match self.wait(from, Key::P2p(tag))? {
            Payload::Cells(v) => Ok(v),
            Payload::Floats(_) => Err(TransportError::Other(
                "collective payload on a point-to-point tag".into(),
            )),
        }
    }

    fn send_values(&mut self, to: usize, tag: u64, values: Vec<f64>) -> Result<(), TransportError> {
        self.post(to, Key::Values(tag), Payload::Floats(values))
    }

    fn recv_values(&mut self, from: usize, tag: u64) -> Result<Vec<f64>, TransportError> {
        match self.wait(from, Key::Values(tag))? {
            Payload::Floats(v) => Ok(v),
            Payload::Cells(_) => Err(TransportError::Other("cells on a values tag".into())),
        }
    }

    fn all_gather(&mut self, values: &[f64]) -> Result<Vec<Vec<f64>>, TransportError> {
        let key = Key::Collective(self.collectives);
        self.collectives += 1;
        for to in 0..self.size() {
            if to != self.rank {
                self.post(to, key, Payload::Floats(values.to_vec()))?;
            }
        }
        (0..self.size())
            .map(|from| {
                if from == self.rank {
                    return Ok(values.to_vec());
                }
                match self.wait(from, key)? {
                    Payload::Floats(v) => Ok(v),
                    Payload::Cells(_) => Err(TransportError::Other("cells on a collective".into())),
                }
            })
            .collect()
    }
}

impl<T> Drop for InProcess<T> {
    fn drop(&mut self) {
        self.gone[self.rank].store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    #[test]
    fn ring_exchange_and_gather() {
        let eps = in_process::<u32>(4);
        let handles: Vec<_> = eps
            .into_iter()
            .map(|mut ep| {
                thread::spawn(move || {
                    let (r, n) = (ep.rank(), ep.size());
                    ep.send((r + 1) % n, 7, vec![r as u32; 3]).unwrap();
                    ep.send((r + 1) % n, 8, vec![100 + r as u32]).unwrap();
                    ep.send_values((r + 1) % n, 7, vec![r as f64 + 0.5])
                        .unwrap();
                    // Receive out of send order: tags keep them apart.
                    let b = ep.recv((r + n - 1) % n, 8).unwrap();
                    let a = ep.recv((r + n - 1) % n, 7).unwrap();
                    // Same tag, other kind: kept apart from the cells.
                    let v = ep.recv_values((r + n - 1) % n, 7).unwrap();
                    assert_eq!(v, vec![((r + n - 1) % n) as f64 + 0.5]);
                    let g = ep.all_gather(&[r as f64 * 2.0]).unwrap();
                    ep.barrier().unwrap();
                    (a, b, g)
                })
            })
            .collect();
        for (r, h) in handles.into_iter().enumerate() {
            let (a, b, g) = h.join().unwrap();
            let left = ((r + 3) % 4) as u32;
            assert_eq!(a, vec![left; 3]);
            assert_eq!(b, vec![100 + left]);
            assert_eq!(g, vec![vec![0.0], vec![2.0], vec![4.0], vec![6.0]]);
        }
    }

    #[test]
    fn a_dead_peer_is_an_error_not_a_hang() {
        let mut eps = in_process::<u8>(2);
        let dead = eps.pop().unwrap();
        drop(dead);
        let mut ep = eps.pop().unwrap();
        assert_eq!(ep.recv(1, 0), Err(TransportError::PeerGone(1)));
        assert_eq!(ep.all_gather(&[1.0]), Err(TransportError::PeerGone(1)));
        assert!(matches!(
            ep.recv(5, 0),
            Err(TransportError::NoSuchPeer { peer: 5, size: 2 })
        ));
    }
}
