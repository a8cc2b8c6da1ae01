//! [`Lazy`]: a subcommand's arguments defined only when that subcommand is parsed.
//!
//! clap's derive builds every subcommand's arguments (hundreds of `Arg`s, each pushed
//! into growing vectors) before it parses anything: for `mmulab sim` of one reference
//! that was ~430 K host instructions and ~45 page faults, a fifth of the process's
//! start-up (docs/benchmarks-log.md, "Start-up"). Wrapped in `Lazy`, a subcommand's
//! arguments are added by `Command::defer`, which clap runs when it builds that
//! subcommand: when it is parsed, or its help is printed. The parsed values, the help
//! and the error messages are the same.

use clap::{ArgMatches, Args, Command, FromArgMatches};

/// The arguments `T` of one subcommand, defined only when that subcommand is built.
pub struct Lazy<T>(pub T);

impl<T: Args> Args for Lazy<T> {
    fn augment_args(cmd: Command) -> Command {
        cmd.defer(|c| keep_about(c, T::augment_args))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        cmd.defer(|c| keep_about(c, T::augment_args_for_update))
    }
}

/// Adds the arguments with `add`, keeping the subcommand's own description: the derive
/// sets it (from the enum variant's doc comment) after the arguments were added, which
/// with `defer` is before, and the `Args` struct's doc comment would replace it.
fn keep_about(c: Command, add: fn(Command) -> Command) -> Command {
    let about = c.get_about().cloned();
    let long_about = c.get_long_about().cloned();
    let c = add(c);
    let c = match about {
        Some(a) => c.about(a),
        None => c.about(None),
    };
    match long_about {
        Some(a) => c.long_about(a),
        None => c.long_about(None),
    }
}

impl<T: FromArgMatches> FromArgMatches for Lazy<T> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(m).map(Lazy)
    }

    fn from_arg_matches_mut(m: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(m).map(Lazy)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(m)
    }

    fn update_from_arg_matches_mut(&mut self, m: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(m)
    }
}

#[cfg(test)]
mod tests {
    use super::Lazy;
    use clap::{CommandFactory, Parser, Subcommand};

    /// Two numbers (a description the subcommands replace with their own).
    #[derive(clap::Args, Debug, PartialEq)]
    struct Two {
        /// A number.
        #[arg(long)]
        n: u32,
        #[arg(long)]
        flag: bool,
    }

    #[derive(Subcommand)]
    enum Sub {
        /// The first.
        One(Lazy<Two>),
        /// The second.
        Other(Two),
    }

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        sub: Sub,
    }

    #[test]
    fn parses_as_the_eager_form() {
        let Sub::One(Lazy(a)) = Cli::try_parse_from(["x", "one", "--n", "3", "--flag"]).unwrap().sub else {
            panic!("one");
        };
        assert_eq!(a, Two { n: 3, flag: true });
        // Errors name the argument as before: an unknown one, a bad value.
        let e = Cli::try_parse_from(["x", "one", "--m", "3"]).err().unwrap().to_string();
        assert!(e.contains("unexpected argument '--m'"), "{e}");
        let e = Cli::try_parse_from(["x", "one", "--n", "x"]).err().unwrap().to_string();
        assert!(e.contains("invalid value 'x' for '--n <N>'"), "{e}");
    }

    #[test]
    fn arguments_exist_only_once_built() {
        // Unbuilt, the lazy subcommand has no arguments yet; the eager one has them.
        let cmd = Cli::command();
        let args = |name: &str| {
            let s = cmd.find_subcommand(name).unwrap();
            s.get_arguments().filter(|a| a.get_id() == "n").count()
        };
        assert_eq!((args("one"), args("other")), (0, 1));
        let mut cmd = Cli::command();
        cmd.build();
        let one = cmd.find_subcommand("one").unwrap();
        assert_eq!(one.get_arguments().filter(|a| a.get_id() == "n").count(), 1);
        let help = cmd.find_subcommand_mut("one").unwrap().render_help().to_string();
        assert!(help.contains("A number"), "{help}");
        // The variant's description, not the struct's (`keep_about`).
        assert!(help.starts_with("The first\n"), "{help}");
        assert!(!help.contains("Two numbers"), "{help}");
    }
}
