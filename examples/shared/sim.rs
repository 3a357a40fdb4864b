//! A small deterministic simulation, shared by the replay example, its tests and its benchmark:
//! a few hundred bodies drifting in an arena, pulled towards the player's ship (pushed away
//! while it fires), with random kicks from a seeded RNG. Integer arithmetic only, so every run
//! of every build steps through the same states.
//!
//! Its state is three originators (`ship`, `swarm`, `clock` with the RNG), which is what a
//! keyframe captures: `Sim` is a `SaveState` of them, and `Replayable`, so a `Player` can drive
//! it.
#![allow(dead_code)]

use savegame::replay::Replayable;
use savegame::{Originator, SaveState, Snapshot};
use serde::{Deserialize, Serialize};

/// The arena is `ARENA` units square.
pub const ARENA: i32 = 1 << 20;
/// How close the ship must come to a body to catch it.
const CATCH_RADIUS: i32 = 6_000;

/// A tiny random number generator (xorshift64*) whose state is part of the game's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimRng {
    pub state: u64,
}

impl SimRng {
    pub fn new(seed: u64) -> Self {
        // xorshift needs a state that is not zero.
        SimRng {
            state: (seed ^ 0x9E37_79B9_7F4A_7C15) | 1,
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u32) -> i32 {
        (self.next_u64() % u64::from(n.max(1))) as i32
    }
}

/// What the player does in one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Input {
    pub thrust_x: i8,
    pub thrust_y: i8,
    pub fire: bool,
}

/// The player's ship: plain data, its own memento.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Originator)]
#[savegame(self_memento)]
pub struct Ship {
    pub x: i32,
    pub y: i32,
    pub vx: i32,
    pub vy: i32,
    pub score: u64,
    pub energy: u32,
}

/// One body of the swarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Body {
    pub x: i32,
    pub y: i32,
    pub vx: i32,
    pub vy: i32,
    pub caught: u32,
}

/// The bodies.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Swarm {
    pub bodies: Vec<Body>,
}

impl Originator for Swarm {
    type Memento = Vec<Body>;

    fn create_memento(&self) -> Vec<Body> {
        self.bodies.clone()
    }

    fn restore_memento(&mut self, bodies: Vec<Body>) -> savegame::Result<()> {
        self.bodies = bodies;
        Ok(())
    }
}

/// The frame counter and the random number generator: plain data, its own memento.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Originator)]
#[savegame(self_memento)]
pub struct Clock {
    pub frame: u64,
    pub rng: SimRng,
}

/// The whole simulation: the three originators a keyframe holds, by field name.
#[derive(Debug, Clone, PartialEq, Eq, SaveState)]
pub struct Sim {
    pub clock: Clock,
    pub ship: Ship,
    pub swarm: Swarm,
}

impl Sim {
    /// A simulation of `bodies` bodies, laid out from `seed`.
    pub fn new(seed: u64, bodies: usize) -> Self {
        let mut rng = SimRng::new(seed);
        let bodies = (0..bodies)
            .map(|_| Body {
                x: rng.below(ARENA as u32),
                y: rng.below(ARENA as u32),
                vx: rng.below(513) - 256,
                vy: rng.below(513) - 256,
                caught: 0,
            })
            .collect();
        Sim {
            ship: Ship {
                x: ARENA / 2,
                y: ARENA / 2,
                vx: 0,
                vy: 0,
                score: 0,
                energy: 500,
            },
            swarm: Swarm { bodies },
            clock: Clock { frame: 0, rng },
        }
    }

    /// Runs one frame.
    pub fn run_frame(&mut self, input: &Input) {
        let Sim { clock, ship, swarm } = self;
        ship.vx = (ship.vx + i32::from(input.thrust_x) * 48).clamp(-6_000, 6_000);
        ship.vy = (ship.vy + i32::from(input.thrust_y) * 48).clamp(-6_000, 6_000);
        ship.vx -= ship.vx / 32;
        ship.vy -= ship.vy / 32;
        ship.x = (ship.x + ship.vx).rem_euclid(ARENA);
        ship.y = (ship.y + ship.vy).rem_euclid(ARENA);
        let firing = input.fire && ship.energy >= 20;
        ship.energy = if firing {
            ship.energy - 20
        } else {
            (ship.energy + 1).min(1_000)
        };
        let pull = if firing { -24 } else { 3 };
        for body in &mut swarm.bodies {
            body.vx = (body.vx + (ship.x - body.x).signum() * pull).clamp(-3_000, 3_000);
            body.vy = (body.vy + (ship.y - body.y).signum() * pull).clamp(-3_000, 3_000);
            if clock.rng.below(16) == 0 {
                body.vx += clock.rng.below(257) - 128;
                body.vy += clock.rng.below(257) - 128;
            }
            body.x += body.vx;
            body.y += body.vy;
            if !(0..ARENA).contains(&body.x) {
                body.vx = -body.vx;
                body.x = body.x.clamp(0, ARENA - 1);
            }
            if !(0..ARENA).contains(&body.y) {
                body.vy = -body.vy;
                body.y = body.y.clamp(0, ARENA - 1);
            }
            if (ship.x - body.x).abs() < CATCH_RADIUS && (ship.y - body.y).abs() < CATCH_RADIUS {
                body.caught += 1;
                ship.score += 1;
                body.x = clock.rng.below(ARENA as u32);
                body.y = clock.rng.below(ARENA as u32);
            }
        }
        clock.frame += 1;
    }

    /// A 64-bit FNV-1a hash of the whole state.
    pub fn hash(&self) -> u64 {
        let mut h = Fnv(0xcbf2_9ce4_8422_2325);
        h.u64(self.clock.frame);
        h.u64(self.clock.rng.state);
        let s = &self.ship;
        for v in [s.x, s.y, s.vx, s.vy] {
            h.i32(v);
        }
        h.u64(s.score);
        h.u64(u64::from(s.energy));
        for b in &self.swarm.bodies {
            for v in [b.x, b.y, b.vx, b.vy] {
                h.i32(v);
            }
            h.u64(u64::from(b.caught));
        }
        h.0
    }
}

impl Replayable for Sim {
    type Input = Input;

    fn restore_keyframe(&mut self, keyframe: &Snapshot) -> savegame::Result<()> {
        self.restore_state(keyframe).map(drop)
    }

    fn step(&mut self, frame: u64, input: Input) -> savegame::Result<()> {
        if frame != self.clock.frame {
            return Err(savegame::Error::rejected(format!(
                "frame {frame} played on the state of frame {}",
                self.clock.frame
            )));
        }
        self.run_frame(&input);
        Ok(())
    }

    fn state_hash(&self) -> Option<u64> {
        Some(self.hash())
    }
}

/// The scripted player of the examples and tests: holds each input for a dozen frames or so.
pub fn scripted_input(seed: u64, frame: u64) -> Input {
    let mut rng = SimRng::new(seed.wrapping_mul(31).wrapping_add(frame / 12));
    Input {
        thrust_x: (rng.below(3) - 1) as i8,
        thrust_y: (rng.below(3) - 1) as i8,
        fire: rng.below(5) == 0,
    }
}

/// The states of a straight run: `frames + 1` hashes, from the start to after the last frame.
pub fn straight_hashes(seed: u64, bodies: usize, frames: u64) -> Vec<u64> {
    let mut sim = Sim::new(seed, bodies);
    let mut hashes = vec![sim.hash()];
    for frame in 0..frames {
        sim.run_frame(&scripted_input(seed, frame));
        hashes.push(sim.hash());
    }
    hashes
}

struct Fnv(u64);

impl Fnv {
    fn u64(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn i32(&mut self, v: i32) {
        self.u64(u64::from(v as u32));
    }
}

/// Records frame `frame` of the scripted match of `seed`: a keyframe of `sim` first if one is
/// due, then the frame's input, applied to `sim`, and the state hash after it.
pub fn record_frame(
    recorder: &mut savegame::Recorder<Input>,
    sim: &mut Sim,
    seed: u64,
    frame: u64,
) -> savegame::Result<()> {
    if recorder.keyframe_due() {
        let mut keyframe = recorder.snapshot();
        sim.capture_state(&mut keyframe)?;
        recorder.keyframe(&keyframe)?;
    }
    let input = scripted_input(seed, frame);
    sim.run_frame(&input);
    recorder.frame(&input, Some(sim.hash()))?;
    Ok(())
}

/// Records `frames` frames of the scripted match of `seed` into `recorder`, from the start.
/// Returns the final state.
pub fn record_match(
    recorder: &mut savegame::Recorder<Input>,
    seed: u64,
    bodies: usize,
    frames: u64,
) -> savegame::Result<Sim> {
    let mut sim = Sim::new(seed, bodies);
    for frame in 0..frames {
        record_frame(recorder, &mut sim, seed, frame)?;
    }
    Ok(sim)
}
