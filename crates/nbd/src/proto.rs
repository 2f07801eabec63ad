//! Wire format of the NBD protocol (the `doc/proto.md` of the NBD project): magic numbers,
//! flags, option and command codes, error values, and the fixed-size request header.

/// `NBDMAGIC`: the first 8 bytes the server sends.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: newstyle negotiation, and the start of every option the client sends.
pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
/// Magic of every option reply.
pub const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Magic of a transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

/// Handshake flag: fixed newstyle negotiation.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
/// Handshake flag: the client may skip the 124 zero bytes after `NBD_OPT_EXPORT_NAME`.
pub const FLAG_NO_ZEROES: u16 = 2;
/// Client flag: fixed newstyle understood.
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1;
/// Client flag: no zero padding after `NBD_OPT_EXPORT_NAME`.
pub const FLAG_C_NO_ZEROES: u32 = 2;

/// Transmission flag: always set.
pub const FLAG_HAS_FLAGS: u16 = 1;
/// Transmission flag: `NBD_CMD_FLUSH` supported.
pub const FLAG_SEND_FLUSH: u16 = 1 << 2;
/// Transmission flag: `NBD_CMD_FLAG_FUA` supported.
pub const FLAG_SEND_FUA: u16 = 1 << 3;
/// Transmission flag: `NBD_CMD_TRIM` supported.
pub const FLAG_SEND_TRIM: u16 = 1 << 5;
/// Transmission flag: `NBD_CMD_WRITE_ZEROES` (and `NBD_CMD_FLAG_NO_HOLE`) supported.
pub const FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
/// Transmission flag: every connection sees one device with no per-connection cache.
pub const FLAG_CAN_MULTI_CONN: u16 = 1 << 8;

/// Option: choose an export and enter transmission (no error reply possible).
pub const OPT_EXPORT_NAME: u32 = 1;
/// Option: abort negotiation.
pub const OPT_ABORT: u32 = 2;
/// Option: list the exports.
pub const OPT_LIST: u32 = 3;
/// Option: describe an export.
pub const OPT_INFO: u32 = 6;
/// Option: describe an export and enter transmission.
pub const OPT_GO: u32 = 7;

/// Option reply: success.
pub const REP_ACK: u32 = 1;
/// Option reply: one export of a list.
pub const REP_SERVER: u32 = 2;
/// Option reply: one item of information about an export.
pub const REP_INFO: u32 = 3;
/// Option reply: unknown option.
pub const REP_ERR_UNSUP: u32 = 0x8000_0001;
/// Option reply: malformed option.
pub const REP_ERR_INVALID: u32 = 0x8000_0003;
/// Option reply: no such export.
pub const REP_ERR_UNKNOWN: u32 = 0x8000_0006;
/// Option reply: option data too large.
pub const REP_ERR_TOO_BIG: u32 = 0x8000_0009;

/// Information type: size and transmission flags.
pub const INFO_EXPORT: u16 = 0;
/// Information type: canonical export name.
pub const INFO_NAME: u16 = 1;
/// Information type: export description.
pub const INFO_DESCRIPTION: u16 = 2;
/// Information type: block size constraints.
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Command flag: force unit access (reply only once the data is durable).
pub const CMD_FLAG_FUA: u16 = 1;
/// Command flag (`NBD_CMD_WRITE_ZEROES`): write real zeroes, punch no hole.
pub const CMD_FLAG_NO_HOLE: u16 = 2;

/// An NBD error value, as sent in the reply's error field.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NbdError(pub u32);

impl NbdError {
    /// Operation not permitted.
    pub const EPERM: NbdError = NbdError(1);
    /// Input/output error.
    pub const EIO: NbdError = NbdError(5);
    /// Invalid argument (bad command, flag, alignment, or a read/trim out of range).
    pub const EINVAL: NbdError = NbdError(22);
    /// No space left (a write beyond the export, or the device is full).
    pub const ENOSPC: NbdError = NbdError(28);
    /// Value too large (a payload beyond the maximum).
    pub const EOVERFLOW: NbdError = NbdError(75);
    /// Operation not supported.
    pub const ENOTSUP: NbdError = NbdError(95);
    /// The server is shutting down.
    pub const ESHUTDOWN: NbdError = NbdError(108);
}

/// A transmission command.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `NBD_CMD_READ` (0).
    Read,
    /// `NBD_CMD_WRITE` (1).
    Write,
    /// `NBD_CMD_DISC` (2): the client disconnects.
    Disc,
    /// `NBD_CMD_FLUSH` (3).
    Flush,
    /// `NBD_CMD_TRIM` (4).
    Trim,
    /// `NBD_CMD_WRITE_ZEROES` (6).
    WriteZeroes,
    /// Anything else (answered `NBD_EINVAL`).
    Unknown(u16),
}

impl Command {
    fn from_code(c: u16) -> Command {
        match c {
            0 => Command::Read,
            1 => Command::Write,
            2 => Command::Disc,
            3 => Command::Flush,
            4 => Command::Trim,
            6 => Command::WriteZeroes,
            c => Command::Unknown(c),
        }
    }

    /// The command flags valid for it (FUA is valid on every command once negotiated).
    fn flags(self) -> u16 {
        match self {
            Command::WriteZeroes => CMD_FLAG_FUA | CMD_FLAG_NO_HOLE,
            _ => CMD_FLAG_FUA,
        }
    }
}

/// The fixed 28-byte header of a transmission request (a write's payload follows it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Command flags.
    pub flags: u16,
    /// The command.
    pub cmd: Command,
    /// The client's cookie, echoed in the reply.
    pub cookie: u64,
    /// First byte.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
}

/// Size of a request header.
pub const REQUEST_LEN: usize = 28;
/// Size of a simple reply header.
pub const REPLY_LEN: usize = 16;

/// Block size constraints (`NBD_INFO_BLOCK_SIZE`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BlockSize {
    /// Smallest length and alignment of a request.
    pub min: u32,
    /// Size below which I/O is inefficient (read-modify-write).
    pub preferred: u32,
    /// Largest read or write payload.
    pub max_payload: u32,
}

impl Request {
    /// Parses a request header; `None` if its magic is wrong (the stream cannot be resynced).
    pub fn parse(b: &[u8; REQUEST_LEN]) -> Option<Request> {
        let u16_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let u64_at = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if u32::from_be_bytes([b[0], b[1], b[2], b[3]]) != REQUEST_MAGIC {
            return None;
        }
        Some(Request {
            flags: u16_at(4),
            cmd: Command::from_code(u16_at(6)),
            cookie: u64_at(8),
            offset: u64_at(16),
            len: u32::from_be_bytes([b[24], b[25], b[26], b[27]]),
        })
    }

    /// The request's header bytes (clients and tests).
    pub fn to_bytes(&self) -> [u8; REQUEST_LEN] {
        let code = match self.cmd {
            Command::Read => 0,
            Command::Write => 1,
            Command::Disc => 2,
            Command::Flush => 3,
            Command::Trim => 4,
            Command::WriteZeroes => 6,
            Command::Unknown(c) => c,
        };
        let mut b = [0u8; REQUEST_LEN];
        b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&self.flags.to_be_bytes());
        b[6..8].copy_from_slice(&code.to_be_bytes());
        b[8..16].copy_from_slice(&self.cookie.to_be_bytes());
        b[16..24].copy_from_slice(&self.offset.to_be_bytes());
        b[24..28].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    /// Bytes of payload that follow the header on the wire.
    pub fn payload_len(&self) -> u64 {
        if self.cmd == Command::Write {
            self.len as u64
        } else {
            0
        }
    }

    /// Checks the request against an export of `size` bytes with constraints `bs`: the error
    /// to answer, if any. Unknown commands and flags, misalignment, and reads or writes beyond
    /// the maximum payload are `EINVAL`; a write or write-zeroes past the end is `ENOSPC`, a
    /// read or trim past the end `EINVAL` (the protocol's advice).
    pub fn check(&self, size: u64, bs: BlockSize) -> Result<(), NbdError> {
        if matches!(self.cmd, Command::Unknown(_)) || self.flags & !self.cmd.flags() != 0 {
            return Err(NbdError::EINVAL);
        }
        if matches!(self.cmd, Command::Disc | Command::Flush) {
            return Ok(());
        }
        let min = bs.min as u64;
        if self.offset % min != 0 || self.len as u64 % min != 0 {
            return Err(NbdError::EINVAL);
        }
        if matches!(self.cmd, Command::Read | Command::Write) && self.len > bs.max_payload {
            return Err(NbdError::EINVAL);
        }
        let end = self.offset.checked_add(self.len as u64);
        if end.is_none_or(|e| e > size) {
            return Err(match self.cmd {
                Command::Write | Command::WriteZeroes => NbdError::ENOSPC,
                _ => NbdError::EINVAL,
            });
        }
        Ok(())
    }
}

/// A simple reply header.
pub fn simple_reply(error: NbdError, cookie: u64) -> [u8; REPLY_LEN] {
    let mut b = [0u8; REPLY_LEN];
    b[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.0.to_be_bytes());
    b[8..16].copy_from_slice(&cookie.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    const BS: BlockSize = BlockSize {
        min: 512,
        preferred: 4096,
        max_payload: 1 << 20,
    };

    fn req(cmd: Command, flags: u16, offset: u64, len: u32) -> Request {
        Request {
            flags,
            cmd,
            cookie: 0xdead_beef_0123_4567,
            offset,
            len,
        }
    }

    #[test]
    fn headers_round_trip_and_bad_magic_is_refused() {
        for cmd in [
            Command::Read,
            Command::Write,
            Command::Disc,
            Command::Flush,
            Command::Trim,
            Command::WriteZeroes,
            Command::Unknown(5),
            Command::Unknown(0xffff),
        ] {
            let r = req(cmd, CMD_FLAG_FUA, 1 << 40, 4096);
            assert_eq!(Request::parse(&r.to_bytes()), Some(r));
        }
        let mut b = req(Command::Read, 0, 0, 512).to_bytes();
        b[0] ^= 1;
        assert_eq!(Request::parse(&b), None);
        let r = simple_reply(NbdError::EINVAL, 7);
        assert_eq!(&r[..4], &SIMPLE_REPLY_MAGIC.to_be_bytes());
        assert_eq!(&r[4..8], &22u32.to_be_bytes());
        assert_eq!(&r[8..], &7u64.to_be_bytes());
    }

    #[test]
    fn checks_give_the_protocols_errors() {
        let size = 1 << 30;
        let ok = |r: Request| r.check(size, BS);
        assert_eq!(ok(req(Command::Read, 0, 0, 4096)), Ok(()));
        assert_eq!(ok(req(Command::Write, CMD_FLAG_FUA, 512, 512)), Ok(()));
        assert_eq!(ok(req(Command::Flush, 0, 0, 0)), Ok(()));
        assert_eq!(
            ok(req(Command::WriteZeroes, CMD_FLAG_NO_HOLE, 0, 1 << 29)),
            Ok(())
        );
        // The last byte, and a zero-length request at the end.
        assert_eq!(ok(req(Command::Read, 0, size - 512, 512)), Ok(()));
        assert_eq!(ok(req(Command::Trim, 0, size, 0)), Ok(()));
        for (r, e) in [
            (req(Command::Unknown(5), 0, 0, 0), NbdError::EINVAL),
            (
                req(Command::Read, CMD_FLAG_NO_HOLE, 0, 512),
                NbdError::EINVAL,
            ),
            (req(Command::Read, 1 << 9, 0, 512), NbdError::EINVAL),
            (req(Command::Read, 0, 100, 512), NbdError::EINVAL),
            (req(Command::Write, 0, 0, 100), NbdError::EINVAL),
            (req(Command::Read, 0, 0, (1 << 20) + 512), NbdError::EINVAL),
            (req(Command::Read, 0, size, 512), NbdError::EINVAL),
            (req(Command::Trim, 0, size - 512, 1024), NbdError::EINVAL),
            (req(Command::Write, 0, size, 512), NbdError::ENOSPC),
            (
                req(Command::WriteZeroes, 0, size, 1 << 20),
                NbdError::ENOSPC,
            ),
            (req(Command::Read, 0, u64::MAX - 511, 512), NbdError::EINVAL),
            (
                req(Command::Write, 0, u64::MAX - 511, 512),
                NbdError::ENOSPC,
            ),
        ] {
            assert_eq!(ok(r), Err(e), "{r:?}");
        }
    }
}
