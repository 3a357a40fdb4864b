//! The playback clock: which frames are due after some elapsed time, at some speed. It never
//! sleeps and never reads the system clock: the game says how much time has passed.

use std::time::Duration;

use crate::error::{Error, Result};

const NANOS_PER_SECOND: u128 = 1_000_000_000;
/// Speeds are kept in millionths, so that time adds up exactly.
const SPEED_UNIT: u128 = 1_000_000;
/// The fastest speed accepted.
const MAX_SPEED: f64 = 1_000_000.0;

/// Playback time, as nanoseconds of recorded time times [`SPEED_UNIT`].
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    frame_rate: u32,
    /// Millionths of real time per unit of recorded time.
    speed: u64,
    played: u128,
}

impl Clock {
    /// A clock at frame 0, at normal speed.
    pub(crate) fn new(frame_rate: u32) -> Self {
        Clock {
            frame_rate: frame_rate.max(1),
            speed: SPEED_UNIT as u64,
            played: 0,
        }
    }

    pub(crate) fn speed(&self) -> f64 {
        self.speed as f64 / SPEED_UNIT as f64
    }

    /// Sets the speed: 1.0 plays at the recorded frame rate, 0.5 at half of it, 4.0 at four
    /// times, 0.0 pauses. Kept to a millionth.
    pub(crate) fn set_speed(&mut self, speed: f64) -> Result<()> {
        if !speed.is_finite() || !(0.0..=MAX_SPEED).contains(&speed) {
            return Err(Error::Config {
                reason: format!("a playback speed is between 0 and {MAX_SPEED}, not {speed}"),
            });
        }
        // In range, so the conversion is exact enough and cannot overflow.
        self.speed = (speed * SPEED_UNIT as f64).round() as u64;
        Ok(())
    }

    /// Lets `elapsed` of real time pass at the current speed.
    pub(crate) fn tick(&mut self, elapsed: Duration) {
        let scaled = elapsed.as_nanos().saturating_mul(u128::from(self.speed));
        self.played = self.played.saturating_add(scaled);
    }

    /// How many frames have been due since frame 0: the whole frames of recorded time played.
    pub(crate) fn due(&self) -> u64 {
        let frames = self.played.saturating_mul(u128::from(self.frame_rate))
            / (NANOS_PER_SECOND * SPEED_UNIT);
        u64::try_from(frames).unwrap_or(u64::MAX)
    }

    /// Moves the clock to the moment `frame` frames are due (after a seek).
    pub(crate) fn set_position(&mut self, frame: u64) {
        let rate = u128::from(self.frame_rate);
        self.played = (u128::from(frame) * NANOS_PER_SECOND * SPEED_UNIT).div_ceil(rate);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_fall_due_at_the_frame_rate_times_the_speed() {
        let mut clock = Clock::new(60);
        assert_eq!(clock.due(), 0);
        clock.tick(Duration::from_secs(1));
        assert_eq!(clock.due(), 60);
        clock.set_speed(0.5).unwrap();
        clock.tick(Duration::from_secs(1));
        assert_eq!(clock.due(), 90);
        clock.set_speed(4.0).unwrap();
        clock.tick(Duration::from_millis(250));
        assert_eq!(clock.due(), 150);
        clock.set_speed(0.0).unwrap();
        clock.tick(Duration::from_secs(100));
        assert_eq!(clock.due(), 150);
        for bad in [-1.0, f64::NAN, f64::INFINITY, 2e6] {
            assert!(clock.set_speed(bad).is_err(), "{bad}");
        }
        assert_eq!(clock.speed(), 0.0);
    }

    #[test]
    fn a_frame_is_due_only_once_its_whole_time_has_passed() {
        let mut clock = Clock::new(60);
        // 16.666666 ms is a hair short of a frame at 60 fps.
        clock.tick(Duration::from_secs(1) / 60);
        assert_eq!(clock.due(), 0);
        clock.tick(Duration::from_nanos(1));
        assert_eq!(clock.due(), 1);
    }

    #[test]
    fn setting_the_position_makes_exactly_that_many_frames_due() {
        for rate in [1, 24, 30, 60, 144, 1000] {
            let mut clock = Clock::new(rate);
            for frame in [0, 1, 7, 59, 60, 2_950, 100_000] {
                clock.set_position(frame);
                assert_eq!(clock.due(), frame, "{frame} at {rate} fps");
            }
        }
    }
}
