/**
 * The agent's sample of its own host (docs/metrics.md): CPU jiffies from /proc/stat (the control plane turns two
 * samples into a busy share), memory from /proc/meminfo, the file system of the agent's state directory, how many
 * guests it holds and the accelerator they run under.
 */
import { readFileSync, statfsSync } from 'node:fs'
import type { HostSample } from '../../contracts/host/metrics.js'

interface CpuTimes {
  busy: number
  total: number
  cpus: number
}

/** The `cpu` line of /proc/stat: idle and iowait are the idle part; every other column is busy. */
export function cpuTimes(procStat: string): CpuTimes {
  const lines = procStat.split('\n')
  const total = (lines.find((l) => l.startsWith('cpu ')) ?? 'cpu 0').trim().split(/\s+/).slice(1).map(Number)
  const sum = total.reduce((a, b) => a + b, 0)
  const idle = (total[3] ?? 0) + (total[4] ?? 0)
  return { busy: sum - idle, total: sum, cpus: lines.filter((l) => /^cpu\d+ /.test(l)).length }
}

/** Total and used memory in KiB: used is what is not available (MemAvailable counts reclaimable caches as free). */
export function memoryKb(meminfo: string): { totalKb: number; usedKb: number } {
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(meminfo)?.[1] ?? 0)
  const totalKb = field('MemTotal')
  return { totalKb, usedKb: Math.max(0, totalKb - field('MemAvailable')) }
}

export function sampleHost(stateDir: string, guests: number, accelerator: string, now = Date.now()): HostSample {
  const cpu = cpuTimes(readFileSync('/proc/stat', 'utf8'))
  const memory = memoryKb(readFileSync('/proc/meminfo', 'utf8'))
  const fs = statfsSync(stateDir)
  return {
    at: now,
    cpuBusy: cpu.busy,
    cpuTotal: cpu.total,
    cpus: cpu.cpus,
    memoryTotalKb: memory.totalKb,
    memoryUsedKb: memory.usedKb,
    diskUsedBytes: (fs.blocks - fs.bfree) * fs.bsize,
    diskTotalBytes: fs.blocks * fs.bsize,
    guests,
    accelerator,
  }
}
