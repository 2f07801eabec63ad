//! An NBD server for the learnedftl workbench (SPEC §8): real, unmodified clients (fio's `nbd`
//! engine, qemu-io, nbdcopy, nbdfuse) read and write a simulated SSD whose FTL keeps every
//! page's data at its physical address.
//!
//! The protocol is implemented directly (fixed newstyle handshake, simple replies) so that the
//! server owns its timing: [`proto`] is the wire format, [`handshake`] the negotiation,
//! [`server`] the transmission phase over any [`server::Backend`], and [`sim`] the backend
//! that runs requests on a [`learnedftl::engine::Simulator`]. [`client`] is a minimal client
//! and [`check`] drives `learnedftl check` streams through the server with it.

pub mod check;
pub mod client;
pub mod handshake;
pub mod proto;
pub mod server;
pub mod sim;

pub use handshake::Export;
pub use proto::{BlockSize, NbdError};
pub use server::{serve, Backend, Cmd, Listener};
