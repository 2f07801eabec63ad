//! # learnedftl
//!
//! A fast, checked SSD workbench: a NAND device model with FEMU-compatible timing, flash
//! translation layers behind one trait, closed-loop (fio-like) and open-loop workloads, an
//! engine that verifies every read against an oracle, and statistics as defined in SPEC §6.
//!
//! Field names used throughout: **lpn** (logical page number), **ppa** (physical page address),
//! **vppn** (virtual PPN, a page numbered in allocation order), **tp** (translation page: a flash
//! page holding `page_size / 8` mapping entries), **gtd** (global translation directory: where
//! each TP lives), **cmt** (cached mapping table), **line** (one block index across every LUN
//! and plane), **lun** (a die: the unit of parallelism).

pub mod addr;
pub mod check;
pub mod config;
pub mod device;
pub mod engine;
pub mod error;
pub mod ftl;
pub mod host;
pub mod mapping;
pub mod params;
pub mod report;
pub mod reproduce;
pub mod request;
pub mod run;
pub mod seed;
pub mod stats;
pub mod trace;
pub mod units;
pub mod workload;

pub use addr::{Lpn, Ppa, SimTime, Tpn, Vppn};
pub use config::{DeviceConfig, Geometry};
pub use device::Device;
pub use error::{ConfigError, DeviceError, FtlError};
pub use ftl::Ftl;
pub use params::Params;
pub use request::{Op, Request};
