/**
 * Start-up steps that create rows when missing (bootstrap, seeds) read first and insert after. Processes of a
 * cluster starting at the same moment can both find a row missing; the slower one then fails on a unique
 * constraint. Each step is idempotent, so running it again sees the winner's rows and succeeds.
 */
export async function retryStartupRace<T>(step: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step()
    } catch (err) {
      if (attempt >= attempts) throw err
      await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 200))
    }
  }
}
