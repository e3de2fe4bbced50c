"""``avatar train``'s settings: one dataclass, every default in one place, each with why it is what it is."""

from __future__ import annotations

from dataclasses import dataclass, field

from talkhead.avatar.data import AvatarDataConfig
from talkhead.errors import InputError


@dataclass(frozen=True)
class AvatarTrainConfig:
    """The default recipe: 9.5 min on 2 cores for 2.3 min of video (13-15 min on one thread for 20-53 s)."""

    data: AvatarDataConfig = field(default_factory=AvatarDataConfig)
    vae_widths: tuple[int, ...] = (32, 64)  # 4x down; crops over ``vae_4x_up_to`` px get a third stage (8x)
    # The largest crop side whose VAE stays 4x down (a latent grid of side / 4 cells; above it, side / 8). 256 on the
    # lecturer (160 px): lip r 0.76 against 0.70, 23.73 against 24.11 dB, training 8.0 against 3.5 min
    # (docs/avatar.md, "Why the new people's lips do not follow").
    vae_4x_up_to: int = field(default=128, metadata={"help": "crops up to this side get a 4x VAE, larger ones 8x"})
    vae_latent: int = 4  # latent channels (8: 33.6 against 32.6 dB on cap13's lower face, detail 0.21 against 0.16)
    vae_steps: int = field(default=700, metadata={"help": "steps of the person's VAE"})
    vae_batch: int = 16
    vae_lr: float = 2e-3
    vae_patch: int = 64  # the VAE learns from random patches of this side (0: whole crops)
    # Then the decoder alone may learn with a critic of this weight (0: off, the default). On its own it sharpens
    # the VAE (cap13's lower face: detail 0.16 -> 0.96 of the real frames', 32.6 -> 28.6 dB), but the avatar
    # draws from the denoiser's latents, which are blurred already: end to end detail stayed 0.19 while PSNR
    # fell 25.9 -> 24.2 dB and lip r 0.60 -> 0.39 (docs/bench/avatar-critic), so it is off by default.
    critic: float = 0.0
    critic_steps: int = 600
    critic_lr: float = 5e-4
    # A pixel refiner after the engine (``avatar.refine``), this many steps (0: none). 1200 lifted the held-out lower
    # face's PSNR 3.1 and 3.0 dB on the lecturer and EDTalk, 1.7 dB on cap12, for 3-9 min more training; off by
    # default, because the lower face comes out softer and cap12's flicker went past 1.2x (docs/avatar.md).
    refine_steps: int = field(default=0, metadata={"help": "steps of a pixel refiner after the engine (0: none)"})
    widths: tuple[int, int, int] = (32, 64, 96)
    # The mouth maps' cells drawn this many times finer, as channels (``face.framing.mouth_maps``); their memory in
    # training grows with its square. 4 on the lecturer and EDTalk: lip r +0.03 and +0.01, PSNR the same.
    map_detail: int = field(default=1, metadata={"help": "mouth maps drawn N x N finer than the latent grid"})
    # The denoiser also sees the reference crop warped by the frame's motion (``avatar.data.structure_crops``), the
    # warp renderer's mouth geometry. Lecturer / EDTalk: lip r 0.71 / 0.47 against 0.70 / 0.55 (from noise it helps:
    # 0.645 against 0.540), so it is off by default.
    structure: bool = field(default=False, metadata={"help": "condition on the warp renderer's drawing of the mouth"})
    teacher_steps: int = field(default=1500, metadata={"help": "steps of the latent denoiser"})
    # Sampling is a bridge from the person's reference latent noised to ``bridge_t`` (not pure noise at
    # T = 1000), in ``sample_steps`` DDIM steps: on cap12 the 2-step bridge is within 0.1 dB of 4 steps,
    # and 11 dB above DDIM-20 from pure noise (docs/avatar.md), so no student is needed by default.
    bridge_t: int = 800
    sample_steps: int = field(default=2, metadata={"help": "denoising steps per drawn frame"})
    # Then the teacher is fine-tuned to start from the person's own mouths (``avatar.mouths``): each frame's
    # reference is one of its ``bank_k`` nearest frames by the lips' points, ``bank_exclude`` or more frames
    # away, and drawing starts each frame from the bank's nearest, played forward while it costs at most
    # ``bank_jump`` (squared percent of the crop) more. cap12 -> cap13: lip r 0.60 -> 0.93, 25.9 -> 27.5 dB,
    # flicker 1.09x the real video's (docs/avatar.md). 0 steps: no bank (one reference, the first face).
    bank_steps: int = field(default=600, metadata={"help": "steps tuning the denoiser on the mouth bank (0: no bank)"})
    bank_lr: float = 5e-4
    bank_k: int = 4
    bank_exclude: int = 50
    bank_jump: float = 10.0
    # The bank's share of the file: every frame's latent and detail is 12 KB at 128 px crops, 25 KB at 256 px, so
    # 2 minutes of a large face would be 70 MB. Over this, whole seconds are kept evenly through the video.
    bank_mb: float = field(default=24.0, metadata={"help": "the mouth bank's size in the file at most, MB"})
    # Then tuned as the bridge samples it (``latent.train.BridgeObjective``): from a bank neighbour noised to
    # ``bridge_t`` (found by the drawing's keys, ``mouths.mouth_keys``), x0 scored against the frame at each of the
    # bridge's steps. Re-enacting the lecturer, EDTalk and cap12 at 1500 steps: +0.31 / +0.92 / +1.53 dB, lip r
    # 0.783 / 0.630 / 0.966 -> 0.798 / 0.689 / 0.973 (600 steps: as many lips, 0.19 dB less; docs/avatar.md,
    # 2026-12-07). 0: the bank teacher ships.
    bridge_steps: int = field(default=1500, metadata={"help": "steps tuning the denoiser as it samples (0: none)"})
    bridge_lr: float = 5e-4
    # The bridge tuned from the neighbour moved to the frame's mouth (``avatar.flow.MouthFlow``), as drawing moves it
    # with ``move_start``: the start then says where the lips are, and the engine learns to keep it. "latent": its
    # latent moved cell by cell; "pixels": its crop moved and encoded again. Neither lifted the lips (lecturer, EDTalk:
    # +0.00 to +0.01; docs/avatar.md, "The start moved to the drawn mouth"), so the default is "off".
    bridge_move: str = field(default="off", metadata={
        "help": "tune the bridge from bank mouths moved to each frame's mouth: off, latent or pixels",
        "choices": ("off", "latent", "pixels")})
    batch: int = 12  # frame pairs
    lr: float = 1e-3
    student_steps: int = 300
    students: tuple[int, ...] = ()  # optional students distilled from the bridged teacher, e.g. 1
    ship: int = 0  # the student that goes into the .avatar (0: the teacher with its bridge)
    base_seconds: float = field(default=6.0, metadata={"help": "seconds of steady video that generation loops"})
    # The base frames' longer side at most (smaller frames are kept as filmed): 6 s of 1080p frames would be
    # about 50 MB in the file and 0.9 GB in memory; 1280 keeps them under 25 MB.
    base_side: int = field(default=1280, metadata={"help": "base frames' longer side at most, px"})
    seed: int = field(default=0, metadata={"help": "randomness of every stage"})

    def __post_init__(self) -> None:
        if not 1 <= self.map_detail <= 8:
            raise InputError(f"--map-detail must be 1 to 8, not {self.map_detail}")
        if self.bridge_move not in ("off", "latent", "pixels"):
            raise InputError(f"--bridge-move is off, latent or pixels, not {self.bridge_move!r}")


def vae_widths(side: int, cfg: AvatarTrainConfig) -> tuple[int, ...]:
    """4x down up to ``vae_4x_up_to`` px crops (128), 8x above: the latent grid stays 24-32 cells a side."""
    return cfg.vae_widths if side <= cfg.vae_4x_up_to else (*cfg.vae_widths, cfg.vae_widths[-1])
