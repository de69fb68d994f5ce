//! OpenCL platforms and devices: discovery, one thread at a time, and one context per device.

use crate::error::{backend, BackendError, BadOption, DeviceError};
use ocl::{flags, Context, Device, Platform, Queue};

/// Platform and device discovery is not safe to run from several threads at
/// once (measured: PoCL then reported no devices to one of two threads), and
/// every device of a run opens from its own thread.
static DISCOVERY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One context per (platform, device) in a process, shared by its virtual
/// devices (as CUDA shares the primary context): kernels from separate
/// contexts on one GPU are time-sliced, never run concurrently, and
/// buffers of one context are foreign to another.
static CONTEXTS: std::sync::Mutex<Vec<((usize, usize), Context)>> =
    std::sync::Mutex::new(Vec::new());

/// Every platform and its devices, by name.
pub fn platforms() -> Vec<(String, Vec<String>)> {
    let _one = DISCOVERY.lock().unwrap_or_else(|e| e.into_inner());
    Platform::list()
        .into_iter()
        .map(|p| {
            let devices = Device::list_all(p)
                .unwrap_or_default()
                .iter()
                .map(|d| d.name().unwrap_or_else(|_| "?".into()))
                .collect();
            (p.name().unwrap_or_else(|_| "?".into()), devices)
        })
        .collect()
}

/// An opened device: its shared context and two profiling queues.
pub(super) struct Opened {
    pub(super) device: Device,
    pub(super) context: Context,
    /// Its place in [`CONTEXTS`]: the runtimes sharing it share buffers.
    pub(super) context_id: u64,
    pub(super) queue: Queue,
    pub(super) side: Queue,
    /// The device's name, for its description.
    pub(super) name: String,
    /// Whether it is a GPU (rather than a CPU implementation).
    pub(super) gpu: bool,
}

/// Opens device `device` of platform `platform`.
pub(super) fn open(platform: usize, device: usize) -> Result<Opened, DeviceError> {
    let _one = DISCOVERY.lock().unwrap_or_else(|e| e.into_inner());
    let plats = Platform::list();
    if plats.is_empty() {
        return Err(BackendError::NoOpenClPlatform.into());
    }
    let plat = *plats.get(platform).ok_or_else(|| {
        DeviceError::from(BadOption::NoPlatform {
            platform,
            count: plats.len(),
        })
    })?;
    let devs = Device::list_all(plat).map_err(backend("OpenCL"))?;
    let dev = *devs.get(device).ok_or_else(|| {
        DeviceError::from(BadOption::NoDevice {
            platform,
            device,
            count: devs.len(),
        })
    })?;
    let (context, context_id) = {
        let mut contexts = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
        match contexts
            .iter()
            .position(|(at, _)| *at == (platform, device))
        {
            Some(i) => (contexts[i].1.clone(), i as u64),
            None => {
                let c = Context::builder()
                    .platform(plat)
                    .devices(dev)
                    .build()
                    .map_err(backend("OpenCL"))?;
                contexts.push(((platform, device), c.clone()));
                (c, contexts.len() as u64 - 1)
            }
        }
    };
    let queue = Queue::new(&context, dev, Some(flags::QUEUE_PROFILING_ENABLE))
        .map_err(backend("OpenCL"))?;
    let side = Queue::new(&context, dev, Some(flags::QUEUE_PROFILING_ENABLE))
        .map_err(backend("OpenCL"))?;
    let name = dev.name().unwrap_or_else(|_| "?".into());
    let gpu = matches!(
        dev.info(ocl::enums::DeviceInfo::Type),
        Ok(ocl::enums::DeviceInfoResult::Type(t)) if t.contains(ocl::flags::DEVICE_TYPE_GPU)
    );
    Ok(Opened {
        device: dev,
        context,
        context_id,
        queue,
        side,
        name,
        gpu,
    })
}
