//! The BERT encoder that all-MiniLM-L6-v2 is (Devlin et al. 2018, as Hugging Face's
//! `BertModel` stores it): token, position and segment embeddings, then post-norm layers of
//! multi-head self-attention and a GELU feed-forward block. Only inference, on the CPU, with
//! candle-core's tensors; written here so mnemo does not build a library of a hundred models
//! to run one.

use std::path::Path;

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{CpuStorage, CustomOp1, CustomOp3, DType, Device, Layout, Shape, Tensor};
use serde::Deserialize;

use super::{LocalEmbedError, invalid, read_error};

/// The fields of config.json the encoder needs.
#[derive(Debug, Deserialize)]
pub(super) struct Config {
    pub hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    layer_norm_eps: f64,
    pub max_position_embeddings: usize,
    #[serde(default)]
    pub pad_token_id: usize,
    #[serde(default = "gelu")]
    hidden_act: String,
    #[serde(default = "absolute")]
    position_embedding_type: String,
}

fn gelu() -> String {
    "gelu".to_string()
}

fn absolute() -> String {
    "absolute".to_string()
}

impl Config {
    /// What this encoder cannot run, named, so a different model fails to load, not to embed.
    pub(super) fn unsupported(&self) -> Option<String> {
        if self.hidden_act != "gelu" {
            return Some(format!("hidden_act {:?} is not \"gelu\"", self.hidden_act));
        }
        if self.position_embedding_type != "absolute" {
            return Some(format!(
                "position_embedding_type {:?} is not \"absolute\"",
                self.position_embedding_type
            ));
        }
        if self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads)
        {
            return Some(format!(
                "hidden_size {} does not split into {} attention heads",
                self.hidden_size, self.num_attention_heads
            ));
        }
        None
    }
}

/// y = x Wᵀ + b, with W as stored (out × in).
struct Linear {
    weight_t: Tensor,
    bias: Tensor,
}

impl Linear {
    /// `x` is (rows, in); the result (rows, out).
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        x.matmul(&self.weight_t)?.broadcast_add(&self.bias)
    }
}

struct LayerNorm {
    gamma: Tensor,
    beta: Tensor,
    eps: f32,
}

impl LayerNorm {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        x.contiguous()?
            .apply_op3_no_bwd(&self.gamma, &self.beta, &LayerNormOp { eps: self.eps })
    }
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

pub(super) struct Bert {
    words: Tensor,
    positions: Tensor,
    /// Segment 0's embedding: mnemo embeds single sentences only.
    segment: Tensor,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
}

impl Bert {
    /// Copies the weights out of the mapped safetensors file.
    pub(super) fn load(path: &Path, config: &Config) -> Result<Self, LocalEmbedError> {
        // Opened first, so a missing or unreadable file gets its own error.
        std::fs::File::open(path).map_err(|e| read_error(path, e))?;
        // Mapped, not read: the tensors are copied out of the mapping once, where reading the
        // file first cost a second 90 MB buffer and a third of a search's time.
        // SAFETY: the mapping is only read while the model loads, and mnemo writes model files
        // through a rename (`install`), never in place, so the mapped file does not change.
        let file = unsafe { MmapedSafetensors::new(path) }.map_err(|e| invalid(path, e))?;
        // Checkpoints saved from a task model keep the encoder under `bert.`.
        let prefix = if file.get("embeddings.word_embeddings.weight").is_ok() {
            ""
        } else {
            "bert."
        };
        let weights = Weights {
            file: &file,
            prefix,
            path,
        };
        let eps = config.layer_norm_eps as f32;
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let at = |name: &str| format!("encoder.layer.{i}.{name}");
                Ok(Layer {
                    query: weights.linear(&at("attention.self.query"))?,
                    key: weights.linear(&at("attention.self.key"))?,
                    value: weights.linear(&at("attention.self.value"))?,
                    attention_out: weights.linear(&at("attention.output.dense"))?,
                    attention_norm: weights.layer_norm(&at("attention.output.LayerNorm"), eps)?,
                    intermediate: weights.linear(&at("intermediate.dense"))?,
                    output: weights.linear(&at("output.dense"))?,
                    output_norm: weights.layer_norm(&at("output.LayerNorm"), eps)?,
                })
            })
            .collect::<Result<Vec<_>, LocalEmbedError>>()?;
        let segments = weights.get("embeddings.token_type_embeddings.weight")?;
        Ok(Self {
            words: weights.get("embeddings.word_embeddings.weight")?,
            positions: weights.get("embeddings.position_embeddings.weight")?,
            segment: segments.get(0).map_err(|e| invalid(path, e))?,
            embeddings_norm: weights.layer_norm("embeddings.LayerNorm", eps)?,
            layers,
            heads: config.num_attention_heads,
            hidden: config.hidden_size,
        })
    }

    /// `ids` is (batch, len) u32 word pieces; `bias` (batch, len) holds 0 for a real token and
    /// f32::MIN for padding, added to the attention scores so padding draws no attention.
    /// Returns the last layer's hidden states, (batch, len, hidden).
    pub(super) fn forward(&self, ids: &Tensor, bias: &Tensor) -> candle_core::Result<Tensor> {
        let (batch, len) = ids.dims2()?;
        let words = self.words.index_select(&ids.flatten_all()?, 0)?;
        let positions = self.positions.narrow(0, 0, len)?.repeat((batch, 1))?;
        let embedded = (words + positions)?.broadcast_add(&self.segment)?;
        let mut x = self.embeddings_norm.forward(&embedded)?;
        let bias = bias.reshape((batch, 1, 1, len))?;
        for layer in &self.layers {
            x = self.layer(layer, &x, &bias, batch, len)?;
        }
        x.reshape((batch, len, self.hidden))
    }

    /// One encoder layer on `x`, (batch·len, hidden).
    fn layer(
        &self,
        layer: &Layer,
        x: &Tensor,
        bias: &Tensor,
        batch: usize,
        len: usize,
    ) -> candle_core::Result<Tensor> {
        let head_size = self.hidden / self.heads;
        // (batch·len, hidden) -> (batch, heads, len, head_size)
        let split = |t: Tensor| {
            t.reshape((batch, len, self.heads, head_size))?
                .transpose(1, 2)?
                .contiguous()
        };
        let scale = 1.0 / (head_size as f64).sqrt();
        let query = split(layer.query.forward(x)?)?;
        let key = split(layer.key.forward(x)?)?;
        let value = split(layer.value.forward(x)?)?;
        let scores = query
            .matmul(&key.t()?)?
            .affine(scale, 0.0)?
            .broadcast_add(bias)?;
        let weights = scores.apply_op1_no_bwd(&SoftmaxLastDim)?;
        let context = weights
            .matmul(&value)?
            .transpose(1, 2)?
            .reshape((batch * len, self.hidden))?;
        let attended = layer
            .attention_norm
            .forward(&(layer.attention_out.forward(&context)? + x)?)?;
        let inner = layer.intermediate.forward(&attended)?.gelu_erf()?;
        layer
            .output_norm
            .forward(&(layer.output.forward(&inner)? + attended)?)
    }
}

struct Weights<'a> {
    file: &'a MmapedSafetensors,
    prefix: &'a str,
    path: &'a Path,
}

impl Weights<'_> {
    fn get(&self, name: &str) -> Result<Tensor, LocalEmbedError> {
        let name = format!("{}{name}", self.prefix);
        self.file
            .load(&name, &Device::Cpu)
            .and_then(|t| t.to_dtype(DType::F32))
            .map_err(|e| invalid(self.path, format!("tensor {name}: {e}")))
    }

    fn linear(&self, name: &str) -> Result<Linear, LocalEmbedError> {
        let weight = self.get(&format!("{name}.weight"))?;
        Ok(Linear {
            weight_t: weight.t().map_err(|e| invalid(self.path, e))?,
            bias: self.get(&format!("{name}.bias"))?,
        })
    }

    fn layer_norm(&self, name: &str, eps: f32) -> Result<LayerNorm, LocalEmbedError> {
        Ok(LayerNorm {
            gamma: self.get(&format!("{name}.weight"))?,
            beta: self.get(&format!("{name}.bias"))?,
            eps,
        })
    }
}

/// The contiguous f32 values of a tensor's storage, or an error naming the op.
fn f32s<'a>(op: &str, storage: &'a CpuStorage, layout: &Layout) -> candle_core::Result<&'a [f32]> {
    let (CpuStorage::F32(values), Some((start, end))) = (storage, layout.contiguous_offsets())
    else {
        return Err(candle_core::Error::Msg(format!(
            "{op} takes contiguous f32 values"
        )));
    };
    Ok(&values[start..end])
}

/// Softmax over the last dimension, in one pass over memory per row.
struct SoftmaxLastDim;

impl CustomOp1 for SoftmaxLastDim {
    fn name(&self) -> &'static str {
        "softmax-last-dim"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let values = f32s(self.name(), storage, layout)?;
        let width = layout.dims().last().copied().unwrap_or(1).max(1);
        let mut out = values.to_vec();
        for row in out.chunks_mut(width) {
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0.0;
            for v in row.iter_mut() {
                *v = (*v - max).exp();
                sum += *v;
            }
            for v in row.iter_mut() {
                *v /= sum;
            }
        }
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

/// (x - mean) / sqrt(var + eps) · gamma + beta over the last dimension.
struct LayerNormOp {
    eps: f32,
}

impl CustomOp3 for LayerNormOp {
    fn name(&self) -> &'static str {
        "layer-norm"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
        gamma: &CpuStorage,
        gamma_layout: &Layout,
        beta: &CpuStorage,
        beta_layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let values = f32s(self.name(), storage, layout)?;
        let gamma = f32s(self.name(), gamma, gamma_layout)?;
        let beta = f32s(self.name(), beta, beta_layout)?;
        let width = gamma.len();
        if beta.len() != width || layout.dims().last() != Some(&width) {
            return Err(candle_core::Error::Msg(format!(
                "layer-norm over {:?} with {width} weights",
                layout.dims()
            )));
        }
        let mut out = values.to_vec();
        for row in out.chunks_mut(width) {
            let n = width as f32;
            let mean = row.iter().sum::<f32>() / n;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
            let scale = 1.0 / (var + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
                *v = (*v - mean) * scale * g + b;
            }
        }
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}
