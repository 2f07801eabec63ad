//! Closed-loop replay of a recording (docs/traces.md "Closed-loop replay"): when each recorded
//! request is issued on the simulated device, given when the requests it could have waited
//! for completed there.
//!
//! The host is modelled from what the recording shows of it. A request issued at `I` could
//! have waited for every request that completed before `I` in the recording (its
//! dependencies), and no other: those still in flight when it was issued were not waited for.
//! The last of its dependencies to complete in the recording, at `C`, is the completion it
//! reacted to, and `I - C` is the host's think time (its own work: the application, the file
//! system, the kernel). On the simulated device the request is issued that think time after
//! the simulated completion of that request, but never before every dependency has completed
//! there, nor before the request issued before it (the host issues in order). A request with
//! no dependency keeps its recorded issue time (the start of the recording is time 0).
//!
//! What it cannot capture: a different device changing the application's own decisions (more
//! or fewer requests, another order, compactions scheduled differently), and dependencies the
//! recording does not show (a request that waited for a timer, not for I/O, is modelled as
//! waiting for the last completion before it).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The schedule of a closed-loop replay, fed request by request in recorded issue order.
#[derive(Clone, Debug, Default)]
pub struct ClosedLoop {
    /// Requests issued whose recorded completion is still ahead of the recorded issue times
    /// seen so far: `(recorded completion, simulated completion)`.
    in_flight: BinaryHeap<Reverse<(u64, u64)>>,
    /// The dependency completed last in the recording so far: `(recorded, simulated)`.
    last_seen: Option<(u64, u64)>,
    /// The latest simulated completion of any dependency so far.
    deps_done: u64,
    /// The simulated issue time of the request before.
    last_issue: u64,
}

impl ClosedLoop {
    /// An empty schedule.
    pub fn new() -> ClosedLoop {
        ClosedLoop::default()
    }

    /// When the host reaches what it did at recorded instant `at` (ns since the recording
    /// began), on the simulated clock (ns since the replay began): a request's issue, or a
    /// phase mark. Instants must come in non-decreasing order.
    pub fn at(&mut self, at: u64) -> u64 {
        while let Some(&Reverse((done, sim_done))) = self.in_flight.peek() {
            if done > at {
                break;
            }
            self.in_flight.pop();
            // Popped in recorded completion order: each is the latest seen so far.
            self.last_seen = Some((done, sim_done));
            self.deps_done = self.deps_done.max(sim_done);
        }
        let after_think = match self.last_seen {
            Some((done, sim_done)) => sim_done + (at - done),
            None => at,
        };
        after_think.max(self.deps_done).max(self.last_issue)
    }

    /// Issues the request recorded as issued at `issued`: returns its simulated issue time.
    pub fn issue(&mut self, issued: u64) -> u64 {
        let t = self.at(issued);
        self.last_issue = t;
        t
    }

    /// The request issued last, recorded as completing at `done`, completed at `sim_done` on
    /// the simulated device.
    pub fn complete(&mut self, done: u64, sim_done: u64) {
        self.in_flight.push(Reverse((done, sim_done)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays `(issue, done, service)` requests where the simulated device takes `service`
    /// ns per request; returns the simulated issue times.
    fn schedule(reqs: &[(u64, u64, u64)]) -> Vec<u64> {
        let mut c = ClosedLoop::new();
        reqs.iter()
            .map(|&(i, d, service)| {
                let t = c.issue(i);
                c.complete(d, t + service);
                t
            })
            .collect()
    }

    #[test]
    fn a_serial_host_keeps_its_think_time_on_a_faster_or_slower_device() {
        // Recorded: each request takes 100 ns, the host thinks 20 ns between them.
        let rec = [(0, 100, 0), (120, 220, 0), (240, 340, 0)];
        let fast: Vec<_> = rec.iter().map(|&(i, d, _)| (i, d, 10)).collect();
        assert_eq!(schedule(&fast), [0, 30, 60]);
        let slow: Vec<_> = rec.iter().map(|&(i, d, _)| (i, d, 500)).collect();
        assert_eq!(schedule(&slow), [0, 520, 1040]);
    }

    #[test]
    fn requests_in_flight_together_stay_together() {
        // Two requests issued together at 0 and 5 (queue depth 2), then one after both.
        let reqs = [(0, 100, 50), (5, 90, 300), (130, 200, 10)];
        // The third waited for both (completed at 90 and 100, recorded): it is issued 30 ns
        // after the later recorded one (100) completed in the replay (50), but not before the
        // other dependency completed there (305).
        assert_eq!(schedule(&reqs), [0, 5, 305]);
    }

    #[test]
    fn marks_and_requests_share_the_clock() {
        let mut c = ClosedLoop::new();
        let t = c.issue(10);
        c.complete(110, t + 40);
        assert_eq!(c.at(150), 90, "40 ns after the simulated completion at 50");
        assert_eq!(c.at(5000), 4940);
        assert_eq!(c.issue(6000), 5940);
    }
}
