"""An MLA decode implementation with vLLM's call shape, over mlatune.

vLLM's MLA backends get, per decode call,

    forward_mqa(q, kv_c_and_k_pe_cache, attn_metadata, layer) -> (out, lse)

  q                    [T, N, 576] (T = decode tokens = B * Sq), or the pair
                       (ql_nope [T, N, 512], q_pe [T, N, 64]), views of
                       larger tensors in vLLM (a transposed bmm output, a
                       slice): passed as they are, strides and all
  kv_c_and_k_pe_cache  [num_blocks, block_size, 576]: one latent head;
                       bf16/fp16, or fp8 stored as uint8 (kv_cache_dtype "fp8")
  attn_metadata        .num_decodes, .num_decode_tokens, .decode.block_table
                       (int32 [B, max_blocks]), .decode.seq_lens (int32 [B])
  layer                ._k_scale (a 0-d float32 device tensor) / ._k_scale_float
                       (fp8); the device tensor is read at run time
  returns              out [T, N, 512] and lse [T, N] (natural log)

vLLM is not installable here, so DecodeMetadata, AttnMetadata and Layer are
stand-ins with the fields this class reads; python/README.md says how to
register it as an out-of-tree backend.

Per call nothing is compiled, nothing is copied and no device memory is
taken beyond out and lse (torch's caching allocator, as vLLM's own backends
do): the runtime, the plans and the workspace are made once.  Needs
libmlatune C API >= 0.2 (q in two parts, views, the kv scale in device
memory); the plans are created with views=True, since vLLM hands over the
pair as views and the fp8 scale as layer._k_scale (a plan without views
has faster kernels for contiguous tensors only, and refuses both).  Run it
as a script for a
self-check on the GPU:  python3 python/examples/vllm_backend.py
"""

import os
import sys
from dataclasses import dataclass
from typing import Optional

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import mlatune  # noqa: E402  (the package beside this folder, or an installed one)


@dataclass
class DecodeMetadata:
    """Stand-in for vLLM's MLACommonDecodeMetadata."""
    block_table: torch.Tensor    # int32 [B, max_blocks]
    seq_lens: torch.Tensor       # int32 [B]: keys per request, new tokens included
    max_seq_len: int = 0         # host-side longest request (0: unknown)
    mean_seq_len: Optional[int] = None  # host-side mean, when the engine has it


@dataclass
class AttnMetadata:
    """Stand-in for vLLM's MLACommonMetadata (the decode part)."""
    num_decodes: int
    num_decode_tokens: int
    decode: DecodeMetadata


class Layer:
    """Stand-in for vLLM's attention layer: the fp8 KV scale, as a device
    tensor (0-d float32, as vLLM registers it) and as the host float vLLM
    keeps beside it."""

    def __init__(self, k_scale=1.0, device=None):
        self._k_scale_float = float(k_scale)
        self._k_scale = torch.tensor(k_scale, dtype=torch.float32, device=device)


class MlaTuneDecodeImpl:
    """MLA decode through mla-tune.

    num_heads:      query heads of this rank (1..128)
    scale:          softmax scale
    kv_cache_dtype: "auto" (the model dtype), "fp8" / "fp8_e4m3"
    block_size:     KV-cache page size (a power of two)
    max_num_seqs:   the engine's largest decode batch (sizes the workspace)
    max_query_len:  Sq of speculative decoding (1 for plain decode)
    """

    def __init__(self, num_heads, scale, kv_cache_dtype="auto", block_size=64, max_num_seqs=256, max_query_len=1,
                 q_dtype=torch.bfloat16, kv_lora_rank=512, qk_rope_head_dim=64, device=None, runtime=None):
        self.num_heads, self.scale = num_heads, scale
        self.kv_lora_rank, self.head_dim = kv_lora_rank, kv_lora_rank + qk_rope_head_dim
        self.kv_cache_dtype, self.block_size = kv_cache_dtype, block_size
        self.max_num_seqs, self.q_dtype = max_num_seqs, q_dtype
        self.device = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
        self._device_index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        self._fp8 = kv_cache_dtype.startswith("fp8")
        self.runtime = runtime or mlatune.Runtime(device=self.device.index)
        self._plans = {}
        self._workspace = None
        self._retired = []  # outgrown workspaces: a captured graph may still use them
        # the first plan (and with it the workspace) is made here, not on the
        # first call (which may be under graph capture)
        self._plan(max_query_len, 1.0)

    def _kv_dtype(self):
        return "fp8_e4m3" if self._fp8 else self.q_dtype

    def _plan(self, sq, kv_scale):
        """One plan per (Sq, host-side fp8 scale); heads, dtypes and page
        size are the layer's.  With the layer's device scale (the usual
        case) the plan's scale is 1.0 and unused, so one plan per Sq.
        views=True: q comes as the pair (ql_nope, q_pe) of views, and the
        fp8 scale as the device tensor layer._k_scale."""
        key = (sq, kv_scale)
        plan = self._plans.get(key)
        if plan is None:
            plan = self.runtime.plan(self.num_heads, sq=sq, d=self.head_dim, dl=self.kv_lora_rank,
                                     page_size=self.block_size, q_dtype=self.q_dtype, kv_dtype=self._kv_dtype(),
                                     softmax_scale=self.scale, kv_scale=kv_scale, max_batch=self.max_num_seqs,
                                     views=True)
            if self._workspace is None or plan.workspace_size > self._workspace.numel():
                if self._workspace is not None:
                    self._retired.append(self._workspace)
                self._workspace = torch.empty((max(plan.workspace_size, 16),), dtype=torch.uint8,
                                              device=self.device)
            self._plans[key] = plan
        return plan

    def _kv_scale(self, layer):
        """(the plan's scale, the device scale to pass or None).  The
        layer's device tensor is read by the kernels at run time (a
        captured graph follows its changes); without one, the host float
        becomes a plan constant."""
        if not self._fp8:
            return 1.0, None
        device_scale = getattr(layer, "_k_scale", None)
        # get_device(): an int, cheaper per call than comparing torch.device objects
        if isinstance(device_scale, torch.Tensor) and device_scale.get_device() == self._device_index:
            return 1.0, device_scale
        host_scale = getattr(layer, "_k_scale_float", None)
        # without the host copy, read the scalar (a synchronisation: once
        # per new scale value, when its plan is made)
        return (float(host_scale) if host_scale is not None else float(device_scale.item())), None

    def forward_mqa(self, q, kv_c_and_k_pe_cache, attn_metadata, layer):
        decode = attn_metadata.decode
        batch = attn_metadata.num_decodes  # seq_lens.shape[0], an int already (run() checks seq_lens)
        tokens = attn_metadata.num_decode_tokens
        plan_scale, device_scale = self._kv_scale(layer)
        plan = self._plan(tokens // batch, plan_scale)
        out = torch.empty((tokens, self.num_heads, self.kv_lora_rank), dtype=self.q_dtype, device=self.device)
        lse = torch.empty((tokens, self.num_heads), dtype=torch.float32, device=self.device)
        # Hints: known lengths let the plan pick its tuned variant for this
        # batch; under graph capture (or without them) MLT_LENGTHS_UNKNOWN
        # runs a length-aware variant that is right for any lengths written
        # into seq_lens before a replay.
        hint, longest = mlatune.LENGTHS_UNKNOWN, 0
        if decode.mean_seq_len is not None and not torch.cuda.is_current_stream_capturing():
            hint, longest = decode.mean_seq_len, max(decode.max_seq_len, decode.mean_seq_len)
        # q: one tensor, or the pair (ql_nope, q_pe) as two pointers with
        # their strides (no copy)
        plan.run(q, kv_c_and_k_pe_cache, decode.block_table, decode.seq_lens, out, lse, self._workspace,
                 seq_len_hint=hint, max_seq_len_hint=longest, kv_scale=device_scale)
        return out, lse


def _self_check():
    """A batch of three requests through the class, checked against a
    plain torch computation."""
    torch.manual_seed(0)
    dev = torch.device("cuda", torch.cuda.current_device())
    heads, page, lens = 16, 64, [7, 300, 1000]
    scale = 576 ** -0.5
    impl = MlaTuneDecodeImpl(num_heads=heads, scale=scale, block_size=page, max_num_seqs=8)
    blocks = (max(lens) + page - 1) // page
    cache = torch.randn((len(lens) * blocks, page, 576), device=dev).to(torch.bfloat16)
    block_table = torch.arange(len(lens) * blocks, dtype=torch.int32, device=dev).view(len(lens), blocks)
    seq_lens = torch.tensor(lens, dtype=torch.int32, device=dev)
    q = torch.randn((len(lens), heads, 576), device=dev).to(torch.bfloat16)
    meta = AttnMetadata(num_decodes=len(lens), num_decode_tokens=len(lens),
                        decode=DecodeMetadata(block_table=block_table, seq_lens=seq_lens, max_seq_len=max(lens)))
    out, lse = impl.forward_mqa(q, cache, meta, Layer(device=dev))
    # vLLM's pair form, as views of q (no copy): the same bits
    out2, lse2 = impl.forward_mqa((q[..., :512], q[..., 512:]), cache, meta, Layer(device=dev))
    same = torch.equal(out.view(torch.int16), out2.view(torch.int16)) and torch.equal(lse.view(torch.int32),
                                                                                      lse2.view(torch.int32))
    worst = 0.0
    for b, length in enumerate(lens):
        keys = cache[block_table[b]].reshape(-1, 576)[:length].float()
        s = q[b].float() @ keys.T * scale
        ref = torch.softmax(s, dim=-1) @ keys[:, :512]
        worst = max(worst, (out[b].float() - ref).abs().max().item() / ref.abs().max().item())
        worst = max(worst, (lse[b] - torch.logsumexp(s, dim=-1)).abs().max().item())
    print(f"mla-tune decode via {impl.runtime.library.path} on {impl.runtime.arch}: "
          f"out {tuple(out.shape)}, lse {tuple(lse.shape)}, largest error {worst:.2e}, "
          f"pair form {'the same bits' if same else 'DIFFERS'}")
    print("variant:", impl._plan(1, 1.0).explain(len(lens)).variant)
    return 0 if worst < 2e-2 and same else 1


if __name__ == "__main__":
    sys.exit(_self_check())
