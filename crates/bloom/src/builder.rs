//! One builder for every filter type: sizing, key and layout options, then `build`.

use std::marker::PhantomData;

use crate::error::{ErrorKind, Result};
use crate::hash::ItemHasher;
use crate::sizing::{self, BLOCK_BITS, BlockedParams, MAX_BITS, MAX_HASHES};

/// Configures and builds a filter; obtained from a filter type's `builder` or
/// `builder_with_bits`.
///
/// # Example
///
/// ```
/// use bloom::BlockedBloomFilter;
///
/// let filter = BlockedBloomFilter::builder(10_000, 1e-4)
///     .key([42; 16]) // reproducible: same key, same bits
///     .build()?;
/// assert_eq!(filter.key(), [42; 16]);
/// # Ok::<(), bloom::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder<F> {
    config: Config,
    filter: PhantomData<fn() -> F>,
}

#[derive(Clone, Debug)]
struct Config {
    /// How the size is given. No default: a filter's size must be a decision.
    size: Size,
    /// The SipHash key. Default: random, drawn when the filter is built.
    key: Option<[u8; 16]>,
    /// Blocks each item touches in blocked layouts. Default: chosen from the target rate
    /// (see [`sizing::blocked_params`]); 1 when sized by bits and hashes.
    blocks_per_key: Option<u32>,
    /// Bits per counter in counting filters. Default: 4 (see [`crate::CountingBloomFilter`]).
    counter_bits: Option<u32>,
}

#[derive(Clone, Copy, Debug)]
enum Size {
    Rate { items: usize, rate: f64 },
    Bits { bits: u64, hashes: u32 },
}

impl<F> Builder<F> {
    pub(crate) fn for_rate(items: usize, rate: f64) -> Self {
        Self::with_size(Size::Rate { items, rate })
    }

    pub(crate) fn for_bits(bits: u64, hashes: u32) -> Self {
        Self::with_size(Size::Bits { bits, hashes })
    }

    fn with_size(size: Size) -> Self {
        Builder {
            config: Config {
                size,
                key: None,
                blocks_per_key: None,
                counter_bits: None,
            },
            filter: PhantomData,
        }
    }

    /// Uses a fixed SipHash key instead of a random one, so that the same items set the same
    /// bits in every run. Default: a random key.
    ///
    /// Keep the key secret when items come from untrusted sources: it is what stops them from
    /// crafting collisions. The serialized filter holds it (`to_bytes` writes it in the
    /// header): keep those bytes as secret as the key.
    ///
    /// # Example
    ///
    /// ```
    /// let a = bloom::BloomFilter::builder(100, 0.01).key([1; 16]).build()?;
    /// let b = bloom::BloomFilter::builder(100, 0.01).key([1; 16]).build()?;
    /// assert_eq!(a.hash(b"x"), b.hash(b"x"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn key(mut self, key: [u8; 16]) -> Self {
        self.config.key = Some(key);
        self
    }

    pub(crate) fn hasher(&self) -> ItemHasher {
        self.config
            .key
            .map_or_else(ItemHasher::random, ItemHasher::with_key)
    }

    /// Resolves the standard layout's (bits, hashes).
    pub(crate) fn standard_size(&self) -> Result<(u64, u32)> {
        match self.config.size {
            Size::Rate { items, rate } => {
                let bits = sizing::optimal_bits(items as u64, rate)?;
                Ok((bits, sizing::optimal_hashes(bits, items as u64)?))
            }
            Size::Bits { bits, hashes } => {
                check_bits_and_hashes(bits, hashes)?;
                Ok((bits, hashes))
            }
        }
    }

    /// Resolves the blocked layouts' geometry. Bits given directly round up to whole blocks.
    pub(crate) fn blocked_size(&self) -> Result<BlockedParams> {
        if let Some(b) = self.config.blocks_per_key
            && !(1..=2).contains(&b)
        {
            return Err(ErrorKind::InvalidBlocksPerKey(b).into());
        }
        let params = match (self.config.size, self.config.blocks_per_key) {
            (Size::Rate { items, rate }, None) => sizing::blocked_params(items as u64, rate)?,
            (Size::Rate { items, rate }, Some(b)) => {
                sizing::blocked_params_with_blocks(items as u64, rate, b)?
            }
            (Size::Bits { bits, hashes }, b) => {
                check_bits_and_hashes(bits, hashes)?;
                let blocks_per_key = b.unwrap_or(1);
                if hashes < blocks_per_key {
                    return Err(ErrorKind::FewerHashesThanBlocks {
                        hashes,
                        blocks_per_key,
                    }
                    .into());
                }
                BlockedParams {
                    bits: bits.div_ceil(BLOCK_BITS) * BLOCK_BITS,
                    hashes,
                    blocks_per_key,
                }
            }
        };
        if params.bits > MAX_BITS {
            return Err(ErrorKind::TooLarge {
                bits: params.bits as f64,
            }
            .into());
        }
        Ok(params)
    }

    pub(crate) fn set_blocks_per_key(mut self, blocks: u32) -> Self {
        self.config.blocks_per_key = Some(blocks);
        self
    }

    pub(crate) fn set_counter_bits(mut self, bits: u32) -> Self {
        self.config.counter_bits = Some(bits);
        self
    }

    pub(crate) fn counter_bits_option(&self) -> Option<u32> {
        self.config.counter_bits
    }
}

fn check_bits_and_hashes(bits: u64, hashes: u32) -> Result<()> {
    if bits == 0 {
        return Err(ErrorKind::ZeroBits.into());
    }
    if bits > MAX_BITS {
        return Err(ErrorKind::TooLarge { bits: bits as f64 }.into());
    }
    if hashes == 0 {
        return Err(ErrorKind::ZeroHashes.into());
    }
    if hashes > MAX_HASHES {
        return Err(ErrorKind::TooManyHashes(u64::from(hashes)).into());
    }
    Ok(())
}
