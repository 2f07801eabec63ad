//! The registry of `--set` keys: every key a parser takes is a [`Key`] declared with `keys!`
//! in a [`Scope`] (the device's keys, the GC policy's, one FTL's own, ...), with its unit and
//! meaning. Parsers can only take keys through a [`Key`] ([`super::Params::take`] and the rest),
//! so what `learnedftl params` lists (the keys of every scope a build consulted) is what the
//! parsers accept, and an unknown key's error can name the valid ones.

use std::fmt;

/// One `--set` key: its name, unit and meaning, and the group it belongs to.
pub struct Key {
    name: &'static str,
    unit: &'static str,
    meaning: &'static str,
    only_with: Option<&'static str>,
    scope: &'static Scope,
}

impl Key {
    /// Made by `keys!` only, so that every key is in the scope that lists it.
    pub(crate) const fn new(
        name: &'static str,
        unit: &'static str,
        meaning: &'static str,
        only_with: Option<&'static str>,
        scope: &'static Scope,
    ) -> Key {
        Key {
            name,
            unit,
            meaning,
            only_with,
            scope,
        }
    }

    /// The name given to `--set`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The unit of the value, or its accepted words (`on/off`, `reserve|femu`); empty for a
    /// plain count.
    pub fn unit(&self) -> &'static str {
        self.unit
    }

    /// One line of meaning.
    pub fn meaning(&self) -> &'static str {
        self.meaning
    }

    /// The `key=value` setting this key needs to apply (giving it otherwise is an error that
    /// says so), e.g. `gc=femu`.
    pub fn only_with(&self) -> Option<&'static str> {
        self.only_with
    }

    /// The group it belongs to.
    pub fn scope(&self) -> &'static Scope {
        self.scope
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({})", self.name)
    }
}

/// A group of keys one parser takes together: the device's, the GC policy's, an FTL's own.
pub struct Scope {
    name: &'static str,
    about: &'static str,
    keys: &'static [&'static Key],
}

impl Scope {
    /// Made by `keys!` only.
    pub(crate) const fn new(
        name: &'static str,
        about: &'static str,
        keys: &'static [&'static Key],
    ) -> Scope {
        Scope { name, about, keys }
    }

    /// Its name (`device`, `gc`, `leaftl`, ...).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What its keys configure, in a few words.
    pub fn about(&self) -> &'static str {
        self.about
    }

    /// Its keys, in the order its parser takes them.
    pub fn keys(&self) -> &'static [&'static Key] {
        self.keys
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scope({})", self.name)
    }
}

/// Declares a [`Scope`] static and a [`Key`] static for each of its keys:
///
/// ```ignore
/// keys! {
///     /// The GC policy's keys.
///     pub static KEYS = "gc", "when garbage collection runs";
///     GC = "gc" ["reserve|femu"] "which rule sets the thresholds";
///     GC_FG_RATIO = "gc_fg_ratio" ["of the lines"] "foreground GC threshold" only with "gc=femu";
/// }
/// ```
macro_rules! keys {
    (
        $(#[$doc:meta])*
        $vis:vis static $scope:ident = $name:literal, $about:literal;
        $(
            $key:ident = $kname:literal [$unit:literal] $meaning:literal
            $(only with $cond:literal)?;
        )+
    ) => {
        $(#[$doc])*
        $vis static $scope: $crate::params::Scope =
            $crate::params::Scope::new($name, $about, &[$(&$key),+]);
        $(
            #[doc = concat!("`", $kname, "` (", $name, "): ", $meaning, ".")]
            $vis static $key: $crate::params::Key = $crate::params::Key::new(
                $kname,
                $unit,
                $meaning,
                $crate::params::keys!(@only $($cond)?),
                &$scope,
            );
        )+
    };
    (@only) => {
        None
    };
    (@only $cond:literal) => {
        Some($cond)
    };
}
pub(crate) use keys;
