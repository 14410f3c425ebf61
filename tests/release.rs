//! The release as a user gets it (`scripts/release` builds `dist/`):
//!
//! - every ELF file shipped (the binary, libduckdb.so, the second tier's engines) needs
//!   at most glibc 2.28, the floor docs/install.md states;
//! - the archive, installed by its `install.sh` into a fresh PREFIX, and the wheels,
//!   installed into a fresh virtual environment, run with a PATH that holds no cargo,
//!   rustc, cc, npm or python (a folder of links to the few system tools needed), an
//!   empty HOME and, where `unshare -n` is permitted, no network: `--version`, an
//!   ingest of the bundled sample, search-conversations, semantic-search on both
//!   tiers, `setup claude-code` into the fake home, `serve` answering `initialize`
//!   and one `tools/call` over stdio; the same through `uv tool install`, `uvx` and
//!   `pipx install` of the wheel (offline, from `dist/` alone) when uv and pipx are
//!   found (`scripts/check-install` installs them);
//! - the third-party notice lists every crate cargo compiles into the binary
//!   (checked against `cargo tree`), and refuses a bundled file it does not name.
//!
//! Without `dist/` (building it is a second full Rust build, for glibc 2.28, longer
//! than CI's budget on 2 cores) the dist tests are reported as not run ([`common::not_run`]);
//! `scripts/check-install` builds `dist/` and runs them with SKILLS_REQUIRE_DIST=1,
//! which turns a missing `dist/` into a failure.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::cli::stdout_of_success;
use common::serve::StdioSession;
use serde_json::{json, Value};

/// The oldest glibc the release runs on (docs/install.md, README "Install").
const GLIBC_FLOOR: (u32, u32) = (2, 28);
/// The target the tests were built for (build.rs), the release's platform.
const TARGET: &str = env!("SKILLS_TARGET");

/// The wheels' platform tag, as scripts/release writes it.
fn wheel_platform() -> String {
    let arch = std::env::consts::ARCH;
    if cfg!(target_os = "macos") {
        let arch = if arch == "aarch64" { "arm64" } else { arch };
        format!("macosx_11_0_{arch}")
    } else {
        format!("manylinux_{}_{}_{arch}", GLIBC_FLOOR.0, GLIBC_FLOOR.1)
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The release files in `dist/` (or `$SKILLS_DIST_DIR`): archive, main wheel, e5
/// wheel; `None` after printing why the test does not run.
fn dist() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let dir = std::env::var_os("SKILLS_DIST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("dist"));
    let v = version();
    let tag = format!("py3-none-{}", wheel_platform());
    let files = (
        dir.join(format!("skills-{v}-{TARGET}.tar.gz")),
        dir.join(format!("skills_host-{v}-{tag}.whl")),
        dir.join(format!("skills_host_e5-{v}-{tag}.whl")),
    );
    for f in [&files.0, &files.1, &files.2] {
        if !f.is_file() {
            let why = format!(
                "{} not built (scripts/release builds dist/: a second full Rust build, for \
                 glibc 2.28, past CI's budget; scripts/check-install builds and checks it)",
                f.display()
            );
            assert!(
                std::env::var_os("SKILLS_REQUIRE_DIST").is_none(),
                "SKILLS_REQUIRE_DIST is set and {why}"
            );
            common::not_run(&why);
            return None;
        }
    }
    Some(files)
}

/// `program` looked up in the test's own PATH.
fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// A folder of links to the system tools a user without a toolchain has (a shell,
/// tar, the coreutils install.sh uses), and nothing else.
fn tools_dir(at: &Path) -> PathBuf {
    let dir = at.join("tools");
    std::fs::create_dir_all(&dir).unwrap();
    for tool in [
        "sh", "tar", "gzip", "cp", "mkdir", "rm", "mv", "dirname", "sed", "cat", "ls",
    ] {
        let found = which(tool).unwrap_or_else(|| panic!("system tool `{tool}` not found"));
        std::os::unix::fs::symlink(found, dir.join(tool)).unwrap();
    }
    dir
}

/// Runs commands as a user of the release: PATH = the tools folder and `bin`, HOME =
/// an empty folder, the working folder = HOME, no network when `unshare -n` works.
struct User {
    path: String,
    home: PathBuf,
    unshare: Option<PathBuf>,
}

impl User {
    fn new(tmp: &Path, bin: &Path) -> Self {
        let tools = tools_dir(tmp);
        let home = tmp.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let path = format!("{}:{}", bin.display(), tools.display());
        let unshare = which("unshare").filter(|u| {
            Command::new(u)
                .args(["-n", "true"])
                .status()
                .is_ok_and(|s| s.success())
        });
        if unshare.is_none() {
            println!("note: `unshare -n` is not permitted here; the network is not cut off");
        }
        let user = Self {
            path,
            home,
            unshare,
        };
        for absent in [
            "cargo", "rustc", "cc", "gcc", "npm", "python3", "python", "pip",
        ] {
            let found = user
                .run(Path::new("sh"), &["-c", &format!("command -v {absent}")])
                .status
                .success();
            assert!(!found, "`{absent}` is reachable on the user's PATH");
        }
        user
    }

    fn command(&self, program: &Path, args: &[&str]) -> Command {
        let program = if program.is_absolute() {
            program.to_path_buf()
        } else {
            std::env::split_paths(&self.path)
                .map(|d| d.join(program))
                .find(|p| p.exists())
                .unwrap_or_else(|| panic!("{} not on the user's PATH", program.display()))
        };
        let mut cmd = match &self.unshare {
            Some(unshare) => {
                let mut c = Command::new(unshare);
                c.arg("-n").arg(program);
                c
            }
            None => Command::new(program),
        };
        cmd.args(args)
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", &self.home)
            .env("LANG", "C.UTF-8")
            .current_dir(&self.home);
        cmd
    }

    fn run(&self, program: &Path, args: &[&str]) -> Output {
        self.command(program, args).output().unwrap()
    }

    /// Runs `skills ARGS` and returns stdout, failing with stderr when it fails.
    fn skills(&self, args: &[&str]) -> String {
        stdout_of_success(&mut self.command(Path::new("skills"), args))
    }

    fn skills_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.skills(&all)).unwrap()
    }
}

/// What a user does after installing, through the `skills` on the user's PATH
/// installed under `prefix`.
fn use_installed(user: &User, prefix: &Path) {
    let share = fs_err::canonicalize(prefix.join("share/skills")).unwrap();
    let printed = user.skills(&["--version"]);
    let glibc = if cfg!(target_os = "linux") {
        "glibc 2.28 or newer"
    } else {
        "built for this machine's"
    };
    for want in [
        format!("skills {}", version()),
        format!("target: {TARGET} ({glibc}"),
        format!("model: {}", share.join("model").display()),
        "static tier: present".to_owned(),
        "second tier: present".to_owned(),
    ] {
        assert!(printed.contains(&want), "`{want}` in:\n{printed}");
    }
    assert!(!printed.contains("not stamped"), "{printed}");

    let sample = share.join("sample/claude-code");
    let ingest = user.skills(&["ingest", sample.to_str().unwrap()]);
    assert!(ingest.contains("embeddings: rebuilt"), "{ingest}");

    let found = user.skills_json(&["run", "search-conversations", "--arg", "term=RUNPATH"]);
    assert!(
        found.to_string().contains("RUNPATH"),
        "search-conversations found nothing: {found}"
    );

    let semantic = |label: &str| {
        let out = user.skills_json(&[
            "run",
            "semantic-search",
            "--arg",
            "query=how does the binary find the database library",
        ]);
        assert!(
            out.to_string().contains("rpath") || out.to_string().contains("RUNPATH"),
            "{label}: semantic-search did not find the rpath discussion: {out}"
        );
    };
    semantic("static tier");
    let status = user.skills_json(&["status"]);
    let model = status["conversations"]["embeddings"]["model"].to_string();
    assert!(model.contains("static"), "static tier embeddings: {status}");
    user.skills(&["ingest", "--embedder", "deep", sample.to_str().unwrap()]);
    let status = user.skills_json(&["status"]);
    let model = status["conversations"]["embeddings"]["model"].to_string();
    assert!(model.contains("e5"), "second tier embeddings: {status}");
    semantic("second tier");

    user.skills(&["setup", "claude-code"]);
    let config: Value =
        serde_json::from_slice(&fs_err::read(user.home.join(".claude.json")).unwrap()).unwrap();
    let command = config["mcpServers"]["skills"]["command"].as_str().unwrap();
    assert_eq!(
        fs_err::canonicalize(command).unwrap(),
        fs_err::canonicalize(prefix.join("bin/skills")).unwrap(),
        "{config}"
    );

    serve_over_stdio(user);
}

/// `skills serve` answers `initialize` and a search-conversations `tools/call`.
fn serve_over_stdio(user: &User) {
    let mut session = StdioSession::spawn(
        user.command(Path::new("skills"), &["serve"])
            .stderr(Stdio::null()),
    );
    let init = session.initialize(1);
    assert_eq!(init["result"]["serverInfo"]["name"], "skills", "{init}");
    session.call_tool(2, "search-conversations", json!({"term": "RUNPATH"}));
    let call = session.answer(2);
    assert_eq!(call["result"]["isError"], false, "{call}");
    assert!(call["result"].to_string().contains("RUNPATH"), "{call}");
    session.close_stdin();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while session.child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            session.child.kill().unwrap();
            panic!("serve did not exit within 20 s of its stdin closing");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_archive_installs_and_runs_without_a_toolchain() {
    let Some((archive, _, _)) = dist() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("prefix");
    let unpack = tmp.path().join("unpack");
    std::fs::create_dir_all(&unpack).unwrap();
    let user = User::new(tmp.path(), &prefix.join("bin"));
    let out = user.run(
        Path::new("tar"),
        &[
            "-xzf",
            archive.to_str().unwrap(),
            "-C",
            unpack.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let script = unpack.join(format!("skills-{}-{TARGET}/install.sh", version()));
    let said = stdout_of_success(
        user.command(Path::new("sh"), &[script.to_str().unwrap()])
            .env("PREFIX", &prefix),
    );
    assert!(said.contains("next: skills setup"), "{said}");
    use_installed(&user, &prefix);
}

#[test]
fn the_wheels_install_into_a_venv_and_run_without_a_toolchain() {
    let Some((_, wheel, _)) = dist() else {
        return;
    };
    let Some(python) = which("python3") else {
        common::not_run("no python3 here to make the virtual environment");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv");
    let made = Command::new(&python)
        .arg("-m")
        .arg("venv")
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success());
    // From dist/ only: the e5 wheel is found there as the dependency it is.
    common::cli::ok(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--no-index", "--find-links"])
            .arg(wheel.parent().unwrap())
            .arg(format!("skills-host=={}", version())),
    );
    // As `uv tool install` and pipx do: only a link to the command goes on the PATH.
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(venv.join("bin/skills"), bin.join("skills")).unwrap();
    let user = User::new(tmp.path(), &bin);
    use_installed(&user, &venv);
}

/// `program` on the test's PATH, else in the tools folder `scripts/check-install`
/// fills (`$SKILLS_CACHE/release-tools/bin`), else `None`.
fn installer(program: &str) -> Option<PathBuf> {
    which(program).or_else(|| {
        let cache = std::env::var_os("SKILLS_CACHE")?;
        let p = Path::new(&cache).join("release-tools/bin").join(program);
        p.is_file().then_some(p)
    })
}

/// `uv tool install` from `dist/` alone (offline, no index), as the README tells a
/// user: uv makes the tool's environment and links only `skills` into its bin folder;
/// the installed command then runs as in the other tests. `uvx` runs the same wheel
/// without installing it.
#[test]
fn uv_tool_install_and_uvx_run_the_wheel_without_a_toolchain() {
    let Some((_, wheel, _)) = dist() else {
        return;
    };
    let Some(uv) = installer("uv") else {
        common::not_run("no uv here (scripts/check-install installs it from PyPI)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (tools, bin) = (tmp.path().join("uv-tools"), tmp.path().join("bin"));
    // `uv tool SUBCOMMAND <offline, dist/ only> REST`: REST last, as it may hold the
    // command uvx runs and that command's arguments.
    let uv_command = |subcommand: &str, rest: &[&str]| {
        let mut c = Command::new(&uv);
        c.args([
            "tool",
            subcommand,
            "--offline",
            "--no-index",
            "--find-links",
        ])
        .arg(wheel.parent().unwrap())
        .args(rest)
        .env("UV_TOOL_DIR", &tools)
        .env("UV_TOOL_BIN_DIR", &bin)
        .env("UV_CACHE_DIR", tmp.path().join("uv-cache"))
        .env("UV_PYTHON_DOWNLOADS", "never")
        .env_remove("VIRTUAL_ENV");
        c
    };
    let spec = format!("skills-host=={}", version());
    // uvx first, while nothing is installed: it runs the wheel from its own cache.
    let printed = stdout_of_success(&mut uv_command(
        "run",
        &["--isolated", "--from", &spec, "skills", "--version"],
    ));
    assert!(printed.contains("second tier: present"), "uvx: {printed}");
    assert!(
        !tools.join("skills-host").exists(),
        "uvx installed the tool instead of running it"
    );
    common::cli::ok(&mut uv_command("install", &[&spec]));
    let user = User::new(tmp.path(), &bin);
    use_installed(&user, &tools.join("skills-host"));
}

/// `pipx install` from `dist/` alone (pip told to use no index), into a fresh
/// PIPX_HOME: pipx links only `skills` into PIPX_BIN_DIR; the command then runs as in
/// the other tests.
#[test]
fn pipx_install_runs_the_wheel_without_a_toolchain() {
    let Some((_, wheel, _)) = dist() else {
        return;
    };
    let Some(pipx) = installer("pipx") else {
        common::not_run("no pipx here (scripts/check-install installs it from PyPI)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (home, bin) = (tmp.path().join("pipx-home"), tmp.path().join("bin"));
    let pip_args = format!(
        "--no-index --find-links {}",
        wheel.parent().unwrap().display()
    );
    common::cli::ok(
        Command::new(&pipx)
            .args(["install", "--pip-args", &pip_args])
            .arg(format!("skills-host=={}", version()))
            .env("PIPX_HOME", &home)
            .env("PIPX_BIN_DIR", &bin)
            .env("PIPX_MAN_DIR", tmp.path().join("man"))
            .env_remove("VIRTUAL_ENV"),
    );
    let user = User::new(tmp.path(), &bin);
    use_installed(&user, &home.join("venvs/skills-host"));
}

/// The GLIBC_x.y versions the ELF file `path` needs (its `.gnu.version_r` section).
#[cfg(target_os = "linux")]
fn glibc_needs(path: &Path) -> BTreeSet<(u32, u32)> {
    let b = fs_err::read(path).unwrap();
    assert_eq!(&b[..4], b"\x7fELF", "{} is not ELF", path.display());
    assert_eq!(b[4], 2, "{} is not 64-bit", path.display());
    let u16_at = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum) = (u64_at(0x28), u16_at(0x3a), u16_at(0x3c));
    let section = |i: usize| {
        let h = shoff + i * shentsize;
        // (type, offset, link)
        (u32_at(h + 4), u64_at(h + 0x18), u32_at(h + 0x28))
    };
    let mut out = BTreeSet::new();
    for i in 0..shnum {
        let (kind, offset, link) = section(i);
        if kind != 0x6fff_fffe {
            continue; // SHT_GNU_verneed
        }
        let strtab = section(link).1;
        let name = |o: usize| {
            let start = strtab + o;
            let end = start + b[start..].iter().position(|&c| c == 0).unwrap();
            std::str::from_utf8(&b[start..end]).unwrap().to_owned()
        };
        let mut need = offset;
        loop {
            let (cnt, aux, next) = (u16_at(need + 2), u32_at(need + 8), u32_at(need + 12));
            let mut a = need + aux;
            for _ in 0..cnt {
                if let Some(v) = name(u32_at(a + 8)).strip_prefix("GLIBC_") {
                    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
                    out.insert((parts.next().unwrap_or(0), parts.next().unwrap_or(0)));
                }
                a += u32_at(a + 12);
            }
            if next == 0 {
                break;
            }
            need += next;
        }
    }
    out
}

#[cfg(target_os = "linux")]
#[test]
fn every_shipped_elf_file_needs_glibc_2_28_at_most() {
    let Some((archive, _, e5_wheel)) = dist() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new("tar")
        .arg("-xzf")
        .arg(&archive)
        .arg("-C")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let top = tmp.path().join(format!("skills-{}-{TARGET}", version()));
    let mut elf = vec![top.join("bin/skills"), top.join("lib/skills/libduckdb.so")];
    for entry in fs_err::read_dir(top.join("share/skills/model/e5")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "so") {
            elf.push(path);
        }
    }
    assert!(elf.len() >= 4, "binary, libduckdb.so, two engines: {elf:?}");
    let mut report = Vec::new();
    for file in &elf {
        let needs = glibc_needs(file);
        let highest = *needs.iter().max().unwrap();
        report.push(format!(
            "{}: GLIBC_{}.{}",
            file.strip_prefix(&top).unwrap().display(),
            highest.0,
            highest.1
        ));
        assert!(
            highest <= GLIBC_FLOOR,
            "{} needs GLIBC_{}.{}, above the stated floor {}.{}",
            file.display(),
            highest.0,
            highest.1,
            GLIBC_FLOOR.0,
            GLIBC_FLOOR.1
        );
    }
    println!("{}", report.join("\n"));
    // The rpath points only near the binary, never at the build machine's folders.
    let needs_runpath = fs_err::read(top.join("bin/skills")).unwrap();
    let text = String::from_utf8_lossy(&needs_runpath);
    assert!(text.contains("$ORIGIN/../lib/skills"));
    assert!(
        !text.contains(".cache/skills/duckdb"),
        "build machine rpath"
    );
    assert!(e5_wheel.is_file());
}

#[test]
fn the_stated_glibc_floor_is_the_one_the_release_builds_for() {
    let floor = format!("{}.{}", GLIBC_FLOOR.0, GLIBC_FLOOR.1);
    let release = fs_err::read_to_string(root().join("scripts/release")).unwrap();
    assert!(release.contains(&format!("GLIBC={floor}\n")));
    for doc in ["README.md", "docs/install.md", "docs/pypi.md"] {
        let text = fs_err::read_to_string(root().join(doc)).unwrap();
        assert!(
            text.contains(&format!("glibc {floor}")),
            "{doc} states glibc {floor}"
        );
    }
    let pyproject = fs_err::read_to_string(root().join("pyproject.toml")).unwrap();
    assert!(
        pyproject.contains(&format!(
            "dependencies = [\"skills-host-e5=={}\"]",
            version()
        )),
        "pyproject.toml pins skills-host-e5 at the crate's version {}",
        version()
    );
}

/// The notice's crate table holds every one of `cargo tree`'s normal, non-proc-macro
/// dependencies for the target (cargo's own walk, a second implementation), and a
/// bundled file that no component names is refused.
#[test]
fn the_third_party_notice_lists_every_compiled_crate() {
    let Some(python) = which("python3") else {
        common::not_run("no python3 to run scripts/third-party-notices");
        return;
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let tree = Command::new(&cargo)
        .args([
            "tree",
            "--locked",
            "--edges",
            "normal,no-proc-macro",
            "--prefix",
            "none",
            "--format",
            "{p}",
            "--target",
            TARGET,
            "--package",
            "skills",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(tree.status.success(), "{tree:?}");
    let want: BTreeSet<String> = String::from_utf8(tree.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let (name, version) = (words.next()?, words.next()?);
            (name != "skills").then(|| format!("{name} {}", version.trim_start_matches('v')))
        })
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let stage = tmp.path().join("stage");
    std::fs::create_dir_all(stage.join("share/skills/skills")).unwrap();
    std::fs::write(stage.join("LICENSE"), "MIT").unwrap();
    std::fs::write(tmp.path().join("duckdb-LICENSE"), "MIT").unwrap();
    let notices = |stage: &Path| {
        Command::new(&python)
            .arg(root().join("scripts/third-party-notices"))
            .arg("--stage")
            .arg(stage)
            .args(["--target", TARGET, "--duckdb-license"])
            .arg(tmp.path().join("duckdb-LICENSE"))
            .env("CARGO", &cargo)
            .output()
            .unwrap()
    };
    let out = notices(&stage);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let listed: BTreeSet<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("## Rust crates"))
        .skip(4)
        .take_while(|l| l.starts_with("| "))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            format!("{} {}", cells[1], cells[2])
        })
        .collect();
    // cargo metadata unifies the dev-dependencies' features (rmcp's reqwest client for
    // the tests), so the notice may list a few crates only test builds compile; it must
    // never miss one the binary compiles.
    let missing: Vec<&String> = want.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "compiled crates missing from the notice: {missing:?}"
    );
    assert!(text.contains("| `bin/skills` | skills |"), "{text}");
    std::fs::create_dir_all(stage.join("lib/skills")).unwrap();
    std::fs::write(stage.join("lib/skills/libstray.so"), "x").unwrap();
    let out = notices(&stage);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("lib/skills/libstray.so"),
        "{out:?}"
    );
}

/// `skills --version` names the version, the target and, per tier, whether the model
/// folder holds it (from the files alone: nothing here would load) and which engine
/// build of the second tier this CPU would load.
#[test]
fn version_names_the_model_tiers_it_finds() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("model");
    std::fs::create_dir_all(model.join("e5")).unwrap();
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_skills"))
            .arg("--version")
            .env("SKILLS_MODEL_DIR", &model)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run();
    for want in [
        format!("skills {}\n", version()),
        "commit: ".to_owned(),
        format!("target: {TARGET} ("),
        format!("model: {}\n", model.display()),
        "static tier: missing".to_owned(),
        "second tier: missing\n".to_owned(),
    ] {
        assert!(text.contains(&want), "`{want}` in:\n{text}");
    }
    for file in ["model.safetensors", "tokenizer.json", "config.json"] {
        std::fs::write(model.join(file), "x").unwrap();
    }
    std::fs::write(model.join("e5/e5-small-q4.bin"), "x").unwrap();
    let text = run();
    assert!(text.contains("static tier: present"), "{text}");
    assert!(
        text.contains("second tier: missing (no engine build this CPU runs)"),
        "{text}"
    );
    std::fs::write(model.join("e5/libe5-x86-64-v2.so"), "x").unwrap();
    let text = run();
    if cfg!(target_arch = "x86_64") {
        assert!(
            text.contains("second tier: present (intfloat/multilingual-e5-small/q4, engine libe5-x86-64-v2.so)"),
            "{text}"
        );
    }
}
