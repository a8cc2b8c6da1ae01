//! The job pool: one way to run independent jobs on this machine's threads, shared by the
//! experiments (`mmulab-experiments`) and the sweeps (`mmulab-sweep`'s local executor).
//!
//! Jobs are taken in order from a shared counter by up to [`Pool::threads`] scoped
//! threads, so a slow job never holds up the others. Two ways to collect:
//! [`Pool::map`] returns every result in job order (an experiment's table);
//! [`Pool::each`] hands results over in the order they finish and starts no new job
//! after a stop request ([`crate::request_stop`], Ctrl-C): a sweep's rows. A stop request
//! ends a running simulation at its next batch in both; `map` still runs every job (each
//! then returns at once) so its result has one entry per job.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

/// Up to `threads` threads (at least 1) running jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool {
    threads: usize,
}

impl Pool {
    /// A pool of `threads` threads (0 counts as 1).
    pub fn new(threads: usize) -> Pool {
        Pool {
            threads: threads.max(1),
        }
    }

    /// A pool over every core (`available_parallelism`; 1 if unknown).
    pub fn all_cores() -> Pool {
        Pool::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// A pool over every core, but at most `max` threads.
    pub fn up_to(max: usize) -> Pool {
        Pool::new(Pool::all_cores().threads.min(max))
    }

    /// Its number of threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// `f` over every job, results in job order.
    pub fn map<J: Sync, R: Send>(&self, jobs: &[J], f: impl Fn(&J) -> R + Sync) -> Vec<R> {
        let slots: Vec<Mutex<Option<R>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..self.threads.min(jobs.len()) {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(j) = jobs.get(i) else { break };
                    *slots[i].lock().expect("lock") = Some(f(j));
                });
            }
        });
        slots
            .into_iter()
            .map(|s| s.into_inner().expect("lock").expect("every job ran"))
            .collect()
    }

    /// `f` over the jobs, each result handed to `done` (with its job's index) on the
    /// calling thread in the order they finish. After a stop request no job starts.
    pub fn each<J: Sync, R: Send>(&self, jobs: &[J], f: impl Fn(&J) -> R + Sync, mut done: impl FnMut(usize, R)) {
        let next = AtomicUsize::new(0);
        let (tx, rx) = mpsc::channel::<(usize, R)>();
        std::thread::scope(|s| {
            for _ in 0..self.threads.min(jobs.len().max(1)) {
                let tx = tx.clone();
                let (next, f) = (&next, &f);
                s.spawn(move || loop {
                    if crate::stop_requested() {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(j) = jobs.get(i) else { break };
                    if tx.send((i, f(j))).is_err() {
                        break;
                    }
                });
            }
            drop(tx);
            for (i, r) in rx {
                done(i, r);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_keeps_job_order_on_any_number_of_threads() {
        let jobs: Vec<u64> = (0..37).collect();
        for t in [0, 1, 3, 64] {
            let out = Pool::new(t).map(&jobs, |j| j * j);
            assert_eq!(out, jobs.iter().map(|j| j * j).collect::<Vec<_>>());
        }
        assert!(Pool::new(4).map(&[] as &[u8], |_| 0).is_empty());
    }

    #[test]
    fn each_hands_every_result_over_once() {
        let jobs: Vec<usize> = (0..20).collect();
        let mut seen = [0; 20];
        Pool::new(3).each(
            &jobs,
            |j| j + 1,
            |i, r| {
                assert_eq!(r, i + 1);
                seen[i] += 1;
            },
        );
        assert!(seen.iter().all(|&n| n == 1));
    }
}
